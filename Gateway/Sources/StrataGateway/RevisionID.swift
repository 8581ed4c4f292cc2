/// A revision id `<generation>-<digest>` (PROTOCOL.md "Documents on the wire"): generation a
/// decimal integer ≥ 1, digest 1 to 64 characters from `[0-9a-zA-Z]`.
struct RevisionID: Hashable, Sendable, CustomStringConvertible {
    var generation: Int
    var digest: String

    /// The largest generation accepted (the column is a PostgreSQL integer).
    static let maximumGeneration = Int(Int32.max)

    init(generation: Int, digest: String) {
        self.generation = generation
        self.digest = digest
    }

    /// Parses `text`, nil when it is not a valid revision id.
    init?(_ text: String) {
        guard let dash = text.firstIndex(of: "-") else { return nil }
        let generationText = text[..<dash]
        let digest = text[text.index(after: dash)...]
        guard !generationText.isEmpty, generationText.count <= 18, generationText.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              let generation = Int(generationText), generation >= 1, generation <= Self.maximumGeneration,
              Self.isValidDigest(digest)
        else { return nil }
        self.generation = generation
        self.digest = String(digest)
    }

    static func isValidDigest(_ digest: some StringProtocol) -> Bool {
        guard !digest.isEmpty, digest.utf8.count <= 64 else { return false }
        return digest.utf8.allSatisfy { byte in
            (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
        }
    }

    var description: String { "\(generation)-\(digest)" }

    /// CouchDB's winner order on leaves: non-deleted before deleted, then the higher generation,
    /// then the greater digest (byte-wise). True when (self, selfDeleted) beats (other, otherDeleted).
    func beats(_ other: RevisionID, selfDeleted: Bool, otherDeleted: Bool) -> Bool {
        if selfDeleted != otherDeleted { return !selfDeleted }
        if generation != other.generation { return generation > other.generation }
        return other.digest.utf8.lexicographicallyPrecedes(digest.utf8)
    }
}

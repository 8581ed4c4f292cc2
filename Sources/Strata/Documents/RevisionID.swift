@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// A CouchDB revision id, `"<generation>-<digest>"`: which revision of a document this is.
///
/// The generation counts the revisions on the document's branch (1 for the first save); the digest
/// tells apart revisions of one generation made on different replicas. Strata's digests are 32
/// lowercase hex digits (an MD5 of the parent revision and the new contents, as CouchDB's), so two
/// replicas that make the same change to the same revision make the same revision id.
///
/// Wherever the API names a revision it is a `RevisionID`: ``DocumentMetadata/revisionID`` and
/// ``DocumentChange/revisionID``. It is `Codable` as its string, the form the gateway's wire
/// format (`_rev`) and CouchDB use.
///
/// ```swift
/// let saved = try db.save(invoice)
/// let id = saved.metadata.revisionID!          // RevisionID(generation: 1, digest: "9a0c…")
/// id.generation                               // 1
/// let same = try RevisionID(parsing: id.description)
/// ```
public struct RevisionID: Sendable, Hashable, Comparable, LosslessStringConvertible, Codable {
    /// The generation: 1 for a document's first revision, one more for each revision after it.
    public let generation: UInt64
    /// The digest: at most 64 characters of `[0-9a-zA-Z]`.
    public let digest: String

    /// The longest digest accepted.
    public static let maximumDigestLength = 64

    /// A revision id of `generation` and `digest`, or nil when the generation is 0 or the digest is
    /// empty, too long, or has a character outside `[0-9a-zA-Z]`.
    public init?(generation: UInt64, digest: String) {
        guard generation > 0, Self.isValidDigest(digest) else { return nil }
        self.generation = generation
        self.digest = digest
    }

    /// A revision id whose digest is lowercase hex digits made from stored bytes (valid by
    /// construction, so not checked again); `generation` is at least 1.
    init(generation: UInt64, hexDigest: String) {
        assert(generation > 0 && Self.isValidDigest(hexDigest))
        self.generation = generation
        self.digest = hexDigest
    }

    /// Parses `"<generation>-<digest>"`; nil when malformed.
    public init?(_ string: String) {
        guard let dash = string.utf8.firstIndex(of: UInt8(ascii: "-")),
              let generation = UInt64(Substring(string.utf8[string.utf8.startIndex..<dash])) else { return nil }
        self.init(generation: generation, digest: String(Substring(string.utf8[string.utf8.index(after: dash)...])))
    }

    /// Parses `"<generation>-<digest>"`, throwing when it is malformed.
    ///
    /// - Throws: ``StrataError/invalidArgument(argument:reason:)`` naming the text.
    public init(parsing string: String) throws {
        guard let id = RevisionID(string) else {
            throw StrataError.invalidArgument(argument: "parsing", reason: "revision id \(string.debugDescription) is not \"<generation>-<digest>\" "
                                              + "with a generation of 1 or more and a digest of 1…\(Self.maximumDigestLength) "
                                              + "characters of [0-9a-zA-Z]")
        }
        self = id
    }

    /// Decodes a revision id from its string (`"<generation>-<digest>"`).
    ///
    /// - Throws: `DecodingError.dataCorrupted` when the string is malformed.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let string = try container.decode(String.self)
        guard let id = RevisionID(string) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "malformed revision id \(string.debugDescription)")
        }
        self = id
    }

    /// Encodes the revision id as its string (`"<generation>-<digest>"`).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    /// `"<generation>-<digest>"`.
    public var description: String { "\(generation)-\(digest)" }

    /// CouchDB's order of revisions: by generation, then by digest byte-wise.
    public static func < (a: RevisionID, b: RevisionID) -> Bool {
        a.generation != b.generation ? a.generation < b.generation : a.digest.utf8.lexicographicallyPrecedes(b.digest.utf8)
    }

    static func isValidDigest(_ digest: String) -> Bool {
        let bytes = digest.utf8
        guard !bytes.isEmpty, bytes.count <= maximumDigestLength else { return false }
        return bytes.allSatisfy { (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }
    }
}

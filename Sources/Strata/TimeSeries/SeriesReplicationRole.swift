@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

extension Keyspace {
    /// Time-series replication: pull checkpoints and upload progress, `(9, seriesId, …)`
    /// (FORMAT.md §14.7).
    package static let seriesReplication = Keyspace(id: 9, name: "series replication")
}

/// A replicating series' part (FORMAT.md §14.7): a series has one writer, the store the gateway
/// granted it to; every other store reads it. Kept in the catalog payload (layout 2):
///
///     role:u8 ‖ [writerID: 16 bytes]     1 claiming, 2 writer (both with the id), 3 reader
///
/// Local appends and edits are taken only by the writer (and by a series that never replicated);
/// the others refuse them with ``StrataError/conflict(_:)``, so no store can fork a series.
enum SeriesReplicationRole: Sendable, Equatable {
    /// Replication started; the gateway has not answered the claim yet. Local writes wait.
    case claiming(writerID: [UInt8])
    /// The gateway granted this store the series: it numbers the events, the gateway keeps them.
    case writer(writerID: [UInt8])
    /// Another store writes the series; this one applies what it pulls.
    case reader

    static let writerIDLength = 16

    func encode(into out: inout [UInt8]) {
        switch self {
        case .claiming(let id): out.append(1); out += id
        case .writer(let id): out.append(2); out += id
        case .reader: out.append(3)
        }
    }

    init(reading r: inout ByteReader) throws {
        let at = r.offset
        switch try r.uint8("replication role") {
        case 1: self = .claiming(writerID: Array(try r.bytes(Self.writerIDLength, "writer id")))
        case 2: self = .writer(writerID: Array(try r.bytes(Self.writerIDLength, "writer id")))
        case 3: self = .reader
        case let k: throw r.corrupted(at: at, "unknown replication role \(k)")
        }
    }

    /// The writer id as the gateway sees it: 32 lowercase hex digits.
    static func text(_ id: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        return String(unsafeUninitializedCapacity: id.count * 2) { out in
            for (i, byte) in id.enumerated() {
                out[2 * i] = digits[Int(byte >> 4)]
                out[2 * i + 1] = digits[Int(byte & 15)]
            }
            return id.count * 2
        }
    }
}

/// The keys a replicating series keeps in keyspace 9 (FORMAT.md §14.7):
///
///     (9, seriesId, 0, string(url)) → varint since   the pull checkpoint of a gateway database
///     (9, seriesId, 1, string(url)) → varint next    events below `next` are on that gateway
struct SeriesReplicaKeys: Sendable {
    private let prefix: [UInt8]

    init(seriesID: UInt64) {
        var e = TupleKeyEncoder(reservingCapacity: 12)
        e.append(Keyspace.seriesReplication.id)
        e.append(seriesID)
        prefix = e.bytes
    }

    private func key(_ kind: UInt64, _ url: String) -> [UInt8] {
        var e = TupleKeyEncoder(reservingCapacity: url.utf8.count + 4)
        e.append(kind)
        e.append(url)
        return prefix + e.bytes
    }

    func checkpoint(_ url: String) -> [UInt8] { key(0, url) }
    func uploaded(_ url: String) -> [UInt8] { key(1, url) }
}

@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

extension Keyspace {
    /// Channel replication: the outbox, its lookup by upload id, pull checkpoints and the newest
    /// final timetoken, `(11, channelId, …)` (FORMAT.md §15.7).
    package static let channelReplication = Keyspace(id: 11, name: "channel replication")
}

/// The keys and values a replicating channel keeps in keyspace 11 (FORMAT.md §15.7):
///
///     (11, channelId, 0, localTimetoken)  → 0x01 ‖ uploadID(16)              a provisional message to upload
///                                         | 0x02 ‖ varint from ‖ varint until a deletion to upload
///     (11, channelId, 1, bytes(uploadID)) → varint localTimetoken              the outbox entry of an upload id
///     (11, channelId, 2, string(url))     → varint since                       the pull checkpoint of a gateway database
///     (11, channelId, 3)                  → varint timetoken                   the newest final timetoken applied
///
/// The outbox is in local timetoken order, which is publish order: a message's entry is keyed by
/// its provisional timetoken, a deletion's by a timetoken the store's clock allocated for it.
struct ChannelReplicaKeys: Sendable {
    let channelID: UInt64
    private let prefix: [UInt8]

    init(channelID: UInt64) {
        self.channelID = channelID
        var e = TupleKeyEncoder(reservingCapacity: 12)
        e.append(Keyspace.channelReplication.id)
        e.append(channelID)
        prefix = e.bytes
    }

    private func key(_ build: (inout TupleKeyEncoder) -> Void) -> [UInt8] {
        var out = prefix
        var rest = TupleKeyEncoder(reservingCapacity: 24)
        build(&rest)
        out += rest.bytes
        return out
    }

    func outbox(_ localTimetoken: UInt64) -> [UInt8] { key { $0.append(0); $0.append(localTimetoken) } }
    var outboxStart: [UInt8] { key { $0.append(0) } }
    var outboxEnd: [UInt8] { key { $0.append(1) } }
    func upload(_ id: [UInt8]) -> [UInt8] { key { $0.append(1); $0.append(bytes: id) } }
    func checkpoint(_ url: String) -> [UInt8] { key { $0.append(2); $0.append(url) } }
    var lastFinal: [UInt8] { key { $0.append(3) } }
    /// Every key of the channel in keyspace 11.
    var all: (start: [UInt8], end: [UInt8]) {
        var e = TupleKeyEncoder(reservingCapacity: 12)
        e.append(Keyspace.channelReplication.id)
        e.append(channelID &+ 1)
        return (prefix, channelID == .max ? Keyspace.channelReplication.end : e.bytes)
    }

    /// The local timetoken of an outbox key, or nil if the key is not one.
    func localTimetoken(ofOutboxKey key: UnsafeRawBufferPointer) -> UInt64? {
        var offset = prefix.count
        guard TupleKey.readUInt(key, at: &offset) == 0, let tt = TupleKey.readUInt(key, at: &offset),
              offset == key.count else { return nil }
        return tt
    }
}

/// One entry of a channel's outbox (§15.7).
enum ChannelOutboxEntry: Sendable, Equatable {
    case message(uploadID: [UInt8])
    case deletion(from: UInt64, until: UInt64)

    var encoded: [UInt8] {
        switch self {
        case .message(let id):
            return [1] + id
        case .deletion(let from, let until):
            var out: [UInt8] = [2]
            Varint.append(from, to: &out)
            Varint.append(until, to: &out)
            return out
        }
    }

    init(decoding bytes: UnsafeRawBufferPointer, what: String) throws {
        var r = ByteReader(bytes, file: what)
        switch try r.uint8("outbox entry kind") {
        case 1:
            self = .message(uploadID: Array(try r.bytes(MessageRecord.uploadIDLength, "upload id")))
        case 2:
            let from = try r.varint("from")
            let until = try r.varint("until")
            guard from < until else { throw r.corrupted(at: 1, "a deletion from \(from) until \(until) is empty") }
            self = .deletion(from: from, until: until)
        case let kind:
            throw r.corrupted(at: 0, "unknown outbox entry kind \(kind)")
        }
        try r.expectEnd("the outbox entry")
    }
}

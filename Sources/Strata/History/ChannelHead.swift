@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// What a channel persists besides its messages, in keyspace 10 (FORMAT.md §15.3):
///
///     key    (10, channelId)
///     value  last u64 LE    the largest timetoken ever assigned in the channel
///            floor u64 LE   messages with a smaller timetoken are gone for good
///
/// It is rewritten in the batch of every publish (and of an options change), so that the store's
/// timetoken clock restarts above every timetoken it handed out, and readers see the floor that
/// belongs to the snapshot they read.
package struct ChannelHead: Equatable, Sendable {
    package var last: UInt64 = 0
    var floor: UInt64 = 0

    static func key(_ channelId: UInt64) -> [UInt8] {
        var e = TupleKeyEncoder(reservingCapacity: 8)
        e.append(Keyspace.channelHeads.id)
        e.append(channelId)
        return e.bytes
    }

    var encoded: [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(16)
        LittleEndian.append(last, to: &out)
        LittleEndian.append(floor, to: &out)
        return out
    }

    package init(last: UInt64 = 0, floor: UInt64 = 0) {
        self.last = last
        self.floor = floor
    }

    init(decoding bytes: UnsafeRawBufferPointer, channelId: UInt64) throws {
        guard bytes.count == 16 else {
            throw StrataError.corrupted(file: "channel head \(channelId)", offset: 0,
                                        reason: "a channel head is 16 bytes, found \(bytes.count)")
        }
        var r = ByteReader(bytes, file: "channel head \(channelId)")
        last = try r.uint64("last timetoken")
        floor = try r.uint64("floor")
    }

    /// The head of a channel in a snapshot (a channel that never published has none: all zero).
    static func read(_ channelId: UInt64, in snapshot: Snapshot) throws -> ChannelHead {
        guard let bytes = try snapshot.get(key(channelId)) else { return ChannelHead() }
        return try bytes.withUnsafeBytes { try ChannelHead(decoding: $0, channelId: channelId) }
    }

    /// Every head in a snapshot, by channel id.
    package static func all(in snapshot: Snapshot) throws -> [UInt64: ChannelHead] {
        let ks = Keyspace.channelHeads
        let cursor = snapshot.cursor(lower: ks.prefix, upper: ks.end)
        var heads: [UInt64: ChannelHead] = [:]
        while try cursor.next() {
            let key = cursor.key
            var decoder = TupleKeyDecoder(key[ks.prefix.count...])
            guard let id = try? decoder.nextUInt(), decoder.isAtEnd else {
                throw StrataError.corrupted(file: "channel heads", offset: 0, reason: "bad key \(TupleKey.describe(key))")
            }
            heads[id] = try ChannelHead(decoding: cursor.value, channelId: id)
        }
        return heads
    }
}

@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// A channel's catalog payload (FORMAT.md §15.1): what the channel is, fixed at creation except for
/// its options.
///
///     u8      layout version (1)
///     varint  n, then n bytes of UTF-8   the message type name (ValueCodec.typeName)
///     u8      option flags               bit 0: retention present, bit 1: limit present
///     varint  retention in 100-ns units  if bit 0
///     varint  limit                      if bit 1
package struct ChannelDescriptor: Equatable, Sendable {
    /// Layout 1; layout 2 (a channel that replicates, FORMAT.md §15.7) adds option flag bit 2,
    /// and allows provisional message records and the replication records of keyspace 11.
    static let layoutVersion: UInt8 = 1
    static let replicatedLayoutVersion: UInt8 = 2

    package var typeName: String
    /// In 100-ns units.
    package var retention: UInt64?
    var limit: UInt64?
    /// Whether the channel replicates with a gateway (it did once: the mark stays). Its publishes
    /// are provisional until the gateway orders them.
    var replicated = false

    init(typeName: String, options: ChannelOptions) {
        self.typeName = typeName
        self.retention = options.retentionUnits
        self.limit = options.limit.map { UInt64($0) }
    }

    init(typeName: String, retention: UInt64?, limit: UInt64?) {
        self.typeName = typeName
        self.retention = retention
        self.limit = limit
    }

    /// The options the descriptor records.
    package var options: ChannelOptions {
        ChannelOptions(retention: retention.map { Self.duration(units: $0) },
                       limit: limit.map { Int(clamping: $0) })
    }

    static func duration(units: UInt64) -> Duration {
        .seconds(Int64(units / 10_000_000)) + .nanoseconds(Int64(units % 10_000_000) * 100)
    }

    var encoded: [UInt8] {
        var out: [UInt8] = [replicated ? Self.replicatedLayoutVersion : Self.layoutVersion]
        Varint.appendLengthPrefixed(typeName, to: &out)
        out.append((retention != nil ? 1 : 0) | (limit != nil ? 2 : 0) | (replicated ? 4 : 0))
        if let retention { Varint.append(retention, to: &out) }
        if let limit { Varint.append(limit, to: &out) }
        return out
    }

    /// Decodes the payload of channel `name`'s catalog entry.
    package init(decoding payload: [UInt8], channel name: String) throws {
        let what = "catalog entry channel \"\(name)\""
        func bad(_ reason: String) -> StrataError { .corrupted(file: what, offset: 0, reason: reason) }
        guard let version = payload.first else { throw bad("empty payload") }
        guard version == Self.layoutVersion || version == Self.replicatedLayoutVersion else {
            throw StrataError.unsupportedFormatVersion(file: what, found: UInt32(version))
        }
        self = try ByteReader.read(payload, file: what, offset: 1) { r in
            let typeName = try r.string("type name")
            let flags = try r.uint8("option flags")
            let known: UInt8 = version == Self.replicatedLayoutVersion ? 7 : 3
            guard flags & ~known == 0 else { throw r.corrupted("unknown option flags 0x\(String(flags, radix: 16))") }
            guard version == Self.layoutVersion || flags & 4 != 0 else {
                throw r.corrupted("layout 2 without the replicated flag")
            }
            var retention: UInt64?
            var limit: UInt64?
            if flags & 1 != 0 {
                let at = r.offset
                let v = try r.varint("retention")
                guard v > 0 else { throw r.corrupted(at: at, "retention 0") }
                retention = v
            }
            if flags & 2 != 0 {
                let at = r.offset
                let v = try r.varint("limit")
                guard v > 0 else { throw r.corrupted(at: at, "limit 0") }
                limit = v
            }
            try r.expectEnd("the options")
            var descriptor = ChannelDescriptor(typeName: typeName, retention: retention, limit: limit)
            descriptor.replicated = flags & 4 != 0
            return descriptor
        }
    }
}

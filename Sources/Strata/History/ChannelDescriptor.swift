import StrataFormat
import StrataFiles
import StrataEngine

/// A channel's catalog payload (FORMAT.md §15.1): what the channel is, fixed at creation except for
/// its options.
///
///     u8      layout version (1)
///     varint  n, then n bytes of UTF-8   the message type name (ValueCodec.typeName)
///     u8      option flags               bit 0: retention present, bit 1: limit present
///     varint  retention in 100-ns units  if bit 0
///     varint  limit                      if bit 1
package struct ChannelDescriptor: Equatable, Sendable {
    static let layoutVersion: UInt8 = 1

    package var typeName: String
    /// In 100-ns units.
    package var retention: UInt64?
    var limit: UInt64?

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
        var out: [UInt8] = [Self.layoutVersion]
        Varint.appendLengthPrefixed(typeName, to: &out)
        out.append((retention != nil ? 1 : 0) | (limit != nil ? 2 : 0))
        if let retention { Varint.append(retention, to: &out) }
        if let limit { Varint.append(limit, to: &out) }
        return out
    }

    /// Decodes the payload of channel `name`'s catalog entry.
    package init(decoding payload: [UInt8], channel name: String) throws {
        let what = "catalog entry channel \"\(name)\""
        func bad(_ reason: String) -> StrataError { .corrupted(file: what, offset: 0, reason: reason) }
        guard let version = payload.first else { throw bad("empty payload") }
        guard version == Self.layoutVersion else {
            throw StrataError.unsupportedFormatVersion(file: what, found: UInt32(version))
        }
        var decoded: ChannelDescriptor?
        try payload.withUnsafeBytes { p in
            var at = 1
            guard let n = Varint.readLength(p, at: &at, limit: p.count), n <= p.count - at else { throw bad("bad type name length") }
            guard let typeName = String(validating: UnsafeRawBufferPointer(rebasing: p[at..<(at + n)]), as: UTF8.self) else {
                throw bad("type name is not UTF-8")
            }
            at += n
            guard at < p.count else { throw bad("missing option flags") }
            let flags = p[at]
            at += 1
            guard flags & ~3 == 0 else { throw bad("unknown option flags 0x\(String(flags, radix: 16))") }
            var retention: UInt64?
            var limit: UInt64?
            if flags & 1 != 0 {
                guard let r = Varint.read(p, at: &at), r > 0 else { throw bad("bad retention") }
                retention = r
            }
            if flags & 2 != 0 {
                guard let l = Varint.read(p, at: &at), l > 0 else { throw bad("bad limit") }
                limit = l
            }
            guard at == p.count else { throw bad("\(p.count - at) bytes after the options") }
            decoded = ChannelDescriptor(typeName: typeName, retention: retention, limit: limit)
        }
        guard let decoded else { throw bad("unreadable payload") }
        self = decoded
    }
}

@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The one-number values replication keeps in keyspaces 9 and 11 (FORMAT.md §14.7, §15.7): a
/// pull checkpoint, a series' upload progress, a channel's newest final timetoken, the local
/// timetoken an upload id points to. Each is a varint and nothing else.
enum ReplicaCounter {
    /// The stored form of `value`.
    static func encoded(_ value: UInt64) -> [UInt8] {
        var out: [UInt8] = []
        Varint.append(value, to: &out)
        return out
    }

    /// The value stored in `bytes`; a corruption naming `what` unless they are exactly one varint.
    static func decode(_ bytes: [UInt8], what: String) throws -> UInt64 {
        try bytes.withUnsafeBytes { raw in
            var r = ByteReader(raw, file: what)
            let v = try r.varint("value")
            try r.expectEnd("the value")
            return v
        }
    }
}

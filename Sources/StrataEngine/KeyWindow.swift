@_spi(Layers) import StrataFormat

/// A key's 8-byte window, the first comparison of every sort and search over keys in memory.
package enum KeyWindow {
    /// The key's bytes `from..<from + 8`, big-endian, zero-padded past its end. For any two keys,
    /// a smaller window means a smaller key (a key that ends inside the window pads with zeros,
    /// and a key that is a prefix of another comes first); equal windows decide nothing.
    @inline(__always)
    package static func window(_ key: UnsafeRawBufferPointer, from: Int) -> UInt64 {
        if key.count >= from + 8 { return UInt64(bigEndian: key.loadUnaligned(fromByteOffset: from, as: UInt64.self)) }
        var h: UInt64 = 0
        for i in from..<(from + 8) { h = h << 8 | UInt64(i < key.count ? key[i] : 0) }
        return h
    }

    /// The window of the key's first 8 bytes.
    @inline(__always)
    package static func head(_ key: UnsafeRawBufferPointer) -> UInt64 { window(key, from: 0) }

    /// Whether the version `(aKey, aSequence)` comes before `(bKey, bSequence)` in memtable order
    /// (key ascending, then newest first); `aHead` and `bHead` are the keys' ``head(_:)``.
    @inline(__always)
    package static func precedes(_ aHead: UInt64, _ aKey: UnsafeRawBufferPointer, _ aSequence: UInt64,
                                 _ bHead: UInt64, _ bKey: UnsafeRawBufferPointer, _ bSequence: UInt64) -> Bool {
        if aHead != bHead { return aHead < bHead }
        let c = ByteComparison.compare(aKey, bKey)
        return c != 0 ? c < 0 : aSequence > bSequence
    }
}

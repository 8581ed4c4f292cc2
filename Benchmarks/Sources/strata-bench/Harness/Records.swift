/// The raw key-value data of the kv-* workloads (and `open`): the same bytes for every engine,
/// as in Scripts/perf/rocksdb_baseline.c.
///
/// Key i, 16 bytes: in sequential order `BE(i) ‖ BE(i·φ)`, in random (hashed) order
/// `BE(i·φ) ‖ BE(i)` with φ = 0x9E3779B97F4A7C15. Value i, 24 bytes: the ASCII of
/// `"value-%018llu"`.
enum Records {
    static let keySize = 16
    static let valueSize = 24

    /// Writes key `i` into `key` (which is resized to 16 bytes).
    @inline(__always) static func key(_ i: Int, sequential: Bool, into key: inout [UInt8]) {
        let n = UInt64(i)
        let hashed = n &* 0x9E37_79B9_7F4A_7C15
        let first = sequential ? n : hashed, second = sequential ? hashed : n
        if key.count != keySize { key = [UInt8](repeating: 0, count: keySize) }
        key.withUnsafeMutableBytes { p in
            p.storeBytes(of: first.bigEndian, toByteOffset: 0, as: UInt64.self)
            p.storeBytes(of: second.bigEndian, toByteOffset: 8, as: UInt64.self)
        }
    }

    static func key(_ i: Int, sequential: Bool) -> [UInt8] {
        var k: [UInt8] = []
        key(i, sequential: sequential, into: &k)
        return k
    }

    /// Writes value `i` into `value` (resized to 24 bytes).
    @inline(__always) static func value(_ i: Int, into value: inout [UInt8]) {
        if value.count != valueSize {
            value = [UInt8](repeating: UInt8(ascii: "0"), count: valueSize)
            value[0] = UInt8(ascii: "v"); value[1] = UInt8(ascii: "a"); value[2] = UInt8(ascii: "l")
            value[3] = UInt8(ascii: "u"); value[4] = UInt8(ascii: "e"); value[5] = UInt8(ascii: "-")
        }
        var x = UInt64(i)
        value.withUnsafeMutableBufferPointer { v in
            for p in stride(from: 23, through: 6, by: -1) {
                v[p] = UInt8(ascii: "0") &+ UInt8(x % 10)
                x /= 10
            }
        }
    }

    static func value(_ i: Int) -> [UInt8] {
        var v: [UInt8] = []
        value(i, into: &v)
        return v
    }

    /// Whether `bytes` is value `i`.
    static func isValue(_ bytes: UnsafeRawBufferPointer, of i: Int) -> Bool {
        guard bytes.count == valueSize else { return false }
        var x = UInt64(i)
        for p in stride(from: 23, through: 6, by: -1) {
            if bytes[p] != UInt8(ascii: "0") &+ UInt8(x % 10) { return false }
            x /= 10
        }
        return bytes[0] == UInt8(ascii: "v") && bytes[5] == UInt8(ascii: "-")
    }
}

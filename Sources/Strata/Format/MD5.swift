import Foundation

/// MD5 (RFC 1321), for what CouchDB's protocol names by it: revision digests and attachment
/// digests (`md5-<base64>`). Not for security.
///
/// ```swift
/// var md5 = MD5()
/// md5.update(Array("abc".utf8))
/// md5.finalize().hexString   // "900150983cd24fb0d6963f7d28e17f72"
/// ```
package struct MD5: Sendable {
    private var state: (UInt32, UInt32, UInt32, UInt32) = (0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476)
    /// Bytes not yet processed (less than one 64-byte block).
    private var pending: [UInt8] = []
    private var length: UInt64 = 0

    package init() { pending.reserveCapacity(64) }

    private static let shifts: [UInt32] = [7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
                                           5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20,
                                           4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
                                           6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21]
    /// floor(|sin(i + 1)| · 2³²).
    private static let constants: [UInt32] = (0..<64).map { UInt32(truncatingIfNeeded: Int64(abs(sin(Double($0 + 1))) * 4_294_967_296)) }

    package mutating func update(_ bytes: some Collection<UInt8>) {
        if bytes.withContiguousStorageIfAvailable({ absorb(UnsafeRawBufferPointer($0)) }) != nil { return }
        Array(bytes).withUnsafeBytes { absorb($0) }
    }

    private mutating func absorb(_ input: UnsafeRawBufferPointer) {
        length &+= UInt64(input.count)
        var offset = 0
        if !pending.isEmpty {
            let take = min(64 - pending.count, input.count)
            pending.append(contentsOf: input[0..<take])
            offset = take
            if pending.count == 64 {
                let block = pending
                block.withUnsafeBytes { process($0) }
                pending.removeAll(keepingCapacity: true)
            }
        }
        while input.count - offset >= 64 {
            process(UnsafeRawBufferPointer(rebasing: input[offset..<offset + 64]))
            offset += 64
        }
        if offset < input.count { pending.append(contentsOf: input[offset...]) }
    }

    /// The 16-byte digest (the value is used up).
    package mutating func finalize() -> [UInt8] {
        let bits = length &* 8
        update([0x80])
        while pending.count != 56 { update([0]) }
        for i in 0..<8 { pending.append(UInt8(truncatingIfNeeded: bits >> (8 * UInt64(i)))) }
        let block = pending
        block.withUnsafeBytes { process($0) }
        pending.removeAll()
        var out: [UInt8] = []
        for word in [state.0, state.1, state.2, state.3] {
            for i in 0..<4 { out.append(UInt8(truncatingIfNeeded: word >> (8 * UInt32(i)))) }
        }
        return out
    }

    /// The digest of `bytes`.
    package static func digest(_ bytes: some Collection<UInt8>) -> [UInt8] {
        var md5 = MD5()
        md5.update(bytes)
        return md5.finalize()
    }

    /// One 64-byte block (`block.count == 64`).
    private mutating func process(_ block: UnsafeRawBufferPointer) {
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 16) { words in
            for i in 0..<16 { words[i] = UInt32(littleEndian: block.loadUnaligned(fromByteOffset: 4 * i, as: UInt32.self)) }
            var (a, b, c, d) = state
            for i in 0..<64 {
                var f: UInt32
                let g: Int
                switch i {
                case 0..<16: f = (b & c) | (~b & d); g = i
                case 16..<32: f = (d & b) | (~d & c); g = (5 * i + 1) & 15
                case 32..<48: f = b ^ c ^ d; g = (3 * i + 5) & 15
                default: f = c ^ (b | ~d); g = (7 * i) & 15
                }
                f = f &+ a &+ Self.constants[i] &+ words[g]
                a = d
                d = c
                c = b
                let shift = Self.shifts[i]
                b = b &+ (f << shift | f >> (32 - shift))
            }
            state = (state.0 &+ a, state.1 &+ b, state.2 &+ c, state.3 &+ d)
        }
    }
}

extension Array where Element == UInt8 {
    /// Lowercase hexadecimal digits of the bytes.
    package var hexString: String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(count * 2)
        for b in self {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}

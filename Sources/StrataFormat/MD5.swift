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

    package init() { pending.reserveCapacity(128) }

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
        // The padding in place: 0x80, zeros to 56 bytes mod 64, the length in bits (u64 LE).
        pending.append(0x80)
        let padded = pending.count <= 56 ? 56 : 120
        pending.append(contentsOf: repeatElement(0, count: padded - pending.count))
        for i in 0..<8 { pending.append(UInt8(truncatingIfNeeded: bits >> (8 * UInt64(i)))) }
        let tail = pending
        pending = []
        tail.withUnsafeBytes { tail in
            process(UnsafeRawBufferPointer(rebasing: tail[0..<64]))
            if tail.count == 128 { process(UnsafeRawBufferPointer(rebasing: tail[64..<128])) }
        }
        let (a, b, c, d) = state
        return [UInt8](unsafeUninitializedCapacity: 16) { out, count in
            for i in 0..<4 {
                let shift = 8 * UInt32(i)
                out[i] = UInt8(truncatingIfNeeded: a >> shift)
                out[4 + i] = UInt8(truncatingIfNeeded: b >> shift)
                out[8 + i] = UInt8(truncatingIfNeeded: c >> shift)
                out[12 + i] = UInt8(truncatingIfNeeded: d >> shift)
            }
            count = 16
        }
    }

    /// The digest of `bytes`.
    package static func digest(_ bytes: some Collection<UInt8>) -> [UInt8] {
        var md5 = MD5()
        md5.update(bytes)
        return md5.finalize()
    }

    /// One 64-byte block (`block.count == 64`): the four rounds of RFC 1321, unrolled by round
    /// so that each step's function, message word and shift are known without a table lookup
    /// (but the sine constants).
    private mutating func process(_ block: UnsafeRawBufferPointer) {
        @inline(__always) func word(_ i: Int) -> UInt32 {
            UInt32(littleEndian: block.loadUnaligned(fromByteOffset: 4 * i, as: UInt32.self))
        }
        @inline(__always) func rotate(_ x: UInt32, _ n: UInt32) -> UInt32 { x << n | x >> (32 - n) }
        var (a, b, c, d) = state
        Self.constants.withUnsafeBufferPointer { k in
            let r1: (UInt32, UInt32, UInt32, UInt32) = (7, 12, 17, 22)
            let r2: (UInt32, UInt32, UInt32, UInt32) = (5, 9, 14, 20)
            let r3: (UInt32, UInt32, UInt32, UInt32) = (4, 11, 16, 23)
            let r4: (UInt32, UInt32, UInt32, UInt32) = (6, 10, 15, 21)
            func shift(_ r: (UInt32, UInt32, UInt32, UInt32), _ i: Int) -> UInt32 {
                switch i & 3 { case 0: return r.0; case 1: return r.1; case 2: return r.2; default: return r.3 }
            }
            for i in 0..<16 {
                let f = (b & c) | (~b & d)
                let t = rotate(f &+ a &+ k[i] &+ word(i), shift(r1, i))
                (a, d, c, b) = (d, c, b, b &+ t)
            }
            for i in 16..<32 {
                let f = (d & b) | (~d & c)
                let t = rotate(f &+ a &+ k[i] &+ word((5 * i + 1) & 15), shift(r2, i))
                (a, d, c, b) = (d, c, b, b &+ t)
            }
            for i in 32..<48 {
                let f = b ^ c ^ d
                let t = rotate(f &+ a &+ k[i] &+ word((3 * i + 5) & 15), shift(r3, i))
                (a, d, c, b) = (d, c, b, b &+ t)
            }
            for i in 48..<64 {
                let f = c ^ (b | ~d)
                let t = rotate(f &+ a &+ k[i] &+ word((7 * i) & 15), shift(r4, i))
                (a, d, c, b) = (d, c, b, b &+ t)
            }
        }
        state = (state.0 &+ a, state.1 &+ b, state.2 &+ c, state.3 &+ d)
    }
}

extension Array where Element == UInt8 {
    /// Lowercase hexadecimal digits of the bytes.
    package var hexString: String { withUnsafeBytes { Self.hexString($0) } }

    /// Lowercase hexadecimal digits of `bytes`, written straight into the string's storage.
    package static func hexString(_ bytes: UnsafeRawBufferPointer) -> String {
        String(unsafeUninitializedCapacity: bytes.count * 2) { out in
            let digits: StaticString = "0123456789abcdef"
            digits.withUTF8Buffer { d in
                for (i, b) in bytes.enumerated() {
                    out[2 * i] = d[Int(b >> 4)]
                    out[2 * i + 1] = d[Int(b & 15)]
                }
            }
            return bytes.count * 2
        }
    }
}

import Foundation

/// MD5 (RFC 1321) of bytes: the attachment digests of the wire format (`"md5-<base64>"`,
/// `Gateway/PROTOCOL.md`) and the replication checkpoint ids. Not for security.
///
/// ```swift
/// ReplicationMD5.hex(Data("abc".utf8))   // "900150983cd24fb0d6963f7d28e17f72"
/// ```
enum ReplicationMD5 {
    private static let shifts: [UInt32] = [
        7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22,
        5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20,
        4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23,
        6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21,
    ]

    /// `floor(abs(sin(i + 1)) * 2^32)` for i in 0..<64.
    private static let constants: [UInt32] = (0..<64).map { UInt32(truncatingIfNeeded: Int64(abs(sin(Double($0 + 1))) * 4_294_967_296.0)) }

    /// The 16-byte digest of `data`.
    static func digest(_ data: some Collection<UInt8>) -> [UInt8] {
        var message = Array(data)
        let bitLength = UInt64(message.count) &* 8
        message.append(0x80)
        while message.count % 64 != 56 { message.append(0) }
        for i in 0..<8 { message.append(UInt8(truncatingIfNeeded: bitLength >> (8 * UInt64(i)))) }

        var a0: UInt32 = 0x6745_2301, b0: UInt32 = 0xEFCD_AB89, c0: UInt32 = 0x98BA_DCFE, d0: UInt32 = 0x1032_5476
        var words = [UInt32](repeating: 0, count: 16)
        var chunk = 0
        while chunk < message.count {
            for i in 0..<16 {
                let o = chunk + i * 4
                words[i] = UInt32(message[o]) | UInt32(message[o + 1]) << 8 | UInt32(message[o + 2]) << 16 | UInt32(message[o + 3]) << 24
            }
            var a = a0, b = b0, c = c0, d = d0
            for i in 0..<64 {
                var f: UInt32
                let g: Int
                switch i {
                case 0..<16: f = (b & c) | (~b & d); g = i
                case 16..<32: f = (d & b) | (~d & c); g = (5 &* i &+ 1) % 16
                case 32..<48: f = b ^ c ^ d; g = (3 &* i &+ 5) % 16
                default: f = c ^ (b | ~d); g = (7 &* i) % 16
                }
                f = f &+ a &+ constants[i] &+ words[g]
                a = d
                d = c
                c = b
                let s = shifts[i]
                b = b &+ ((f << s) | (f >> (32 - s)))
            }
            a0 = a0 &+ a
            b0 = b0 &+ b
            c0 = c0 &+ c
            d0 = d0 &+ d
            chunk += 64
        }
        var out: [UInt8] = []
        out.reserveCapacity(16)
        for word in [a0, b0, c0, d0] {
            for i in 0..<4 { out.append(UInt8(truncatingIfNeeded: word >> (8 * UInt32(i)))) }
        }
        return out
    }

    /// The digest as 32 lowercase hex digits.
    static func hex(_ data: some Collection<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(32)
        for byte in digest(data) {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The wire form of an attachment digest: `"md5-"` and the base64 of the digest.
    static func attachmentDigest(_ data: Data) -> String {
        "md5-" + Data(digest(data)).base64EncodedString()
    }
}

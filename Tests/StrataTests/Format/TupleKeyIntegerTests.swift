import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// Keyspace, SegmentProperties, EventRecord and MessageRecord used to encode and decode the tuple
// key's unsigned integers by hand; they now call `TupleKey.appendUInt` / `TupleKey.readUInt`.
// The hand-written versions are kept below, verbatim in behaviour, as the reference: the bytes
// written must not change (they are on disk), and decoding must reject what it rejected.
//
// One deliberate difference: the old readers accepted a non-shortest integer (`0x12 0x00 0x05`
// for 5), which no writer ever produced; `TupleKey.readUInt` refuses it, as `TupleKeyDecoder`
// always has. `nonShortestFormsAreNowRejected` pins that down.

private enum Before {
    /// Keyspace.init(id:)'s prefix.
    static func keyspacePrefix(_ id: UInt64) -> [UInt8] {
        var p: [UInt8] = []
        let n = (64 - id.leadingZeroBitCount + 7) / 8
        p.append(0x10 + UInt8(n))
        for i in stride(from: n - 1, through: 0, by: -1) { p.append(UInt8(truncatingIfNeeded: id >> (8 * UInt64(i)))) }
        return p
    }

    /// EventRecord.appendUInt.
    static func appendUInt(_ value: UInt64, to out: inout [UInt8]) {
        let n = (64 - value.leadingZeroBitCount + 7) / 8
        out.append(0x10 &+ UInt8(truncatingIfNeeded: n))
        var i = n - 1
        while i >= 0 {
            out.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(i))))
            i -= 1
        }
    }

    /// MessageRecord.encodeTimetoken.
    static func encodeTimetoken(_ timetoken: UInt64, into out: inout [UInt8]) {
        out.removeAll(keepingCapacity: true)
        let n = TupleKey.significantByteCount(timetoken)
        out.append(0x10 &+ UInt8(truncatingIfNeeded: n))
        var shift = 8 * (n - 1)
        while shift >= 0 {
            out.append(UInt8(truncatingIfNeeded: timetoken >> UInt64(shift)))
            shift -= 8
        }
    }

    /// EventRecord.readUInt.
    static func readUInt(_ bytes: UnsafeRawBufferPointer, at p: inout Int) -> UInt64? {
        guard p < bytes.count else { return nil }
        let code = bytes[p]
        guard code >= 0x10, code <= 0x18 else { return nil }
        let n = Int(code - 0x10)
        guard p + 1 + n <= bytes.count else { return nil }
        var v: UInt64 = 0
        for i in 0..<n { v = v << 8 | UInt64(bytes[p + 1 + i]) }
        p += 1 + n
        return v
    }

    /// SegmentProperties.keyspace(of:).
    static func keyspace(of key: UnsafeRawBufferPointer) -> UInt64 {
        guard let tag = key.first, tag >= 0x10, tag <= 0x18 else { return .max }
        let n = Int(tag - 0x10)
        guard key.count >= 1 + n else { return .max }
        var v: UInt64 = 0
        for i in 0..<n { v = (v << 8) | UInt64(key[1 + i]) }
        return v
    }

    /// MessageRecord.timetoken(ofKey:prefixLength:).
    static func timetoken(ofKey key: UnsafeRawBufferPointer, prefixLength: Int) -> UInt64? {
        guard key.count > prefixLength else { return nil }
        let type = key[prefixLength]
        guard type >= 0x10 && type <= 0x18 else { return nil }
        let n = Int(type - 0x10)
        guard key.count == prefixLength + 1 + n else { return nil }
        var v: UInt64 = 0
        for i in 0..<n { v = v << 8 | UInt64(key[prefixLength + 1 + i]) }
        return v
    }

    /// MessageRecord.parse(key:), with its magic bytes 0x11 0x03 for keyspace 3.
    static func parse(key: UnsafeRawBufferPointer) -> (channelId: UInt64, timetoken: UInt64)? {
        guard key.count >= 4, key[0] == 0x11, key[1] == 0x03 else { return nil }
        let type = key[2]
        guard type >= 0x10 && type <= 0x18 else { return nil }
        let n = Int(type - 0x10)
        guard key.count > 3 + n else { return nil }
        var id: UInt64 = 0
        for i in 0..<n { id = id << 8 | UInt64(key[3 + i]) }
        guard let tt = timetoken(ofKey: key, prefixLength: 3 + n) else { return nil }
        return (id, tt)
    }
}

/// 0, 1, 255, 256, 2^32, 2^64 − 1, and both sides of every byte-length boundary.
private let edgeValues: [UInt64] = {
    var values: [UInt64] = [0, 1, 255, 256, 1 << 32, .max]
    for bytes in 1..<8 {
        let boundary = UInt64(1) << UInt64(8 * bytes)
        values += [boundary - 1, boundary, boundary + 1]
    }
    return values
}()

private func sampleValues() -> [UInt64] {
    var rng = SplitMix64(seed: 0x7091_E1E7)
    // Random values of every length, not only 8-byte ones.
    let random = (0..<400).map { i in rng.next() >> UInt64((i % 9) * 8 % 64) }
    return edgeValues + random
}

/// Whether a shortest-form unsigned integer (what every writer produces) starts at `offset`.
private func isShortestUInt(_ bytes: [UInt8], at offset: Int) -> Bool {
    var decoder = TupleKeyDecoder(bytes[offset...])
    return (try? decoder.nextUInt()) != nil
}

@Suite struct TupleKeyIntegerTests {
    @Test func keyspacePrefixesAreTheBytesOfBefore() {
        for id in sampleValues() {
            #expect(Keyspace(id: id).prefix == Before.keyspacePrefix(id), "id \(id)")
        }
        // The ids in use, spelled out: 0x10 for keyspace 0, 0x11 n for 1...255.
        #expect(Keyspace.catalog.prefix == [0x10])
        #expect(Keyspace.channelMessages.prefix == [0x11, 0x03])
        #expect(Keyspace(id: 256).prefix == [0x12, 0x01, 0x00])
        #expect(Keyspace(id: .max).prefix == [0x18] + [UInt8](repeating: 0xFF, count: 8))
    }

    @Test func appendedIntegersAreTheBytesOfBefore() {
        var scratch: [UInt8] = [0xAA]  // appended after what is there
        var timetoken: [UInt8] = [0xBB]  // cleared first
        for value in sampleValues() {
            var old: [UInt8] = [0xAA]
            Before.appendUInt(value, to: &old)
            scratch = [0xAA]
            TupleKey.appendUInt(value, to: &scratch)
            #expect(scratch == old, "value \(value)")
            var viaEvent: [UInt8] = [0xAA]
            EventRecord.appendUInt(value, to: &viaEvent)
            #expect(viaEvent == old, "value \(value)")
            var encoder = TupleKeyEncoder()
            encoder.append(value)
            #expect([0xAA] + encoder.bytes == old, "value \(value)")

            var oldTimetoken: [UInt8] = [0xBB]
            Before.encodeTimetoken(value, into: &oldTimetoken)
            MessageRecord.encodeTimetoken(value, into: &timetoken)
            #expect(timetoken == oldTimetoken, "timetoken \(value)")
        }
        // Worked examples.
        for (value, bytes) in [(0, [0x10]), (1, [0x11, 0x01]), (255, [0x11, 0xFF]), (256, [0x12, 0x01, 0x00]),
                               (1 << 32, [0x15, 0x01, 0x00, 0x00, 0x00, 0x00])] as [(UInt64, [UInt8])] {
            var out: [UInt8] = []
            TupleKey.appendUInt(value, to: &out)
            #expect(out == bytes, "value \(value)")
        }
    }

    @Test func keysDecodeBackAsBefore() {
        for value in sampleValues() {
            for channel in [0, 1, 255, 256, value] as [UInt64] {
                var key = MessageRecord.channelPrefix(channel)
                let prefixLength = key.count
                TupleKey.appendUInt(value, to: &key)
                key.withUnsafeBytes { k in
                    #expect(MessageRecord.timetoken(ofKey: k, prefixLength: prefixLength) == value)
                    #expect(Before.timetoken(ofKey: k, prefixLength: prefixLength) == value)
                    let parsed = MessageRecord.parse(key: k)
                    #expect(parsed?.channelId == channel && parsed?.timetoken == value)
                    let old = Before.parse(key: k)
                    #expect(old?.channelId == channel && old?.timetoken == value)
                    #expect(SegmentProperties.keyspace(of: k) == Keyspace.channelMessages.id)
                }
            }
            let event = EventRecord.key(series: value, sequence: value / 3)
            event.withUnsafeBytes { k in
                var p = 0, q = 0
                for _ in 0..<3 {
                    #expect(TupleKey.readUInt(k, at: &p) == Before.readUInt(k, at: &q))
                    #expect(p == q)
                }
                #expect(p == k.count)
                #expect(EventRecord.sequence(ofKey: k, prefixLength: EventRecord.seriesPrefix(value).count) == value / 3)
            }
            Keyspace(id: value).prefix.withUnsafeBytes { k in
                #expect(SegmentProperties.keyspace(of: k) == value)
                #expect(Before.keyspace(of: k) == value)
            }
        }
    }

    /// Every input the hand-written readers refused is still refused; what they accepted in the
    /// shortest form is still accepted, with the same value and end offset.
    @Test func malformedInputIsRejectedAsBefore() {
        var rng = SplitMix64(seed: 0xBAD_1E7)
        var inputs: [[UInt8]] = [[], [0x0F], [0x19], [0x20], [0x01, 0x00], [0x11], [0x12, 0x01], [0x18, 0xFF],
                                 [0x11, 0x03], [0x11, 0x03, 0x11], [0x11, 0x03, 0x11, 0x05, 0x12, 0x01]]
        for _ in 0..<5_000 {
            let count = Int(rng.next() % 11)
            inputs.append((0..<count).map { _ in
                // Mostly integer type bytes, so that the interesting cases come up often.
                let r = rng.next()
                return r % 3 == 0 ? UInt8(0x0E + (r >> 8) % 12) : UInt8(truncatingIfNeeded: r >> 8)
            })
        }
        for input in inputs {
            input.withUnsafeBytes { k in
                for start in 0...k.count {
                    var p = start, q = start
                    let new = TupleKey.readUInt(k, at: &p)
                    let old = start < k.count ? Before.readUInt(k, at: &q) : nil
                    if old == nil {
                        #expect(new == nil, "\(input) at \(start)")
                        #expect(p == start)
                    } else if isShortestUInt(input, at: start) {
                        #expect(new == old && p == q, "\(input) at \(start)")
                    } else {
                        #expect(new == nil && p == start, "\(input) at \(start)")
                    }
                    // The fast reader and the throwing decoder agree everywhere.
                    var decoder = TupleKeyDecoder(input[start...])
                    let decoded = try? decoder.nextUInt()
                    #expect(decoded == new, "\(input) at \(start)")
                    if decoded != nil { #expect(decoder.offset == p - start) }
                }
                for prefixLength in 0...k.count {
                    let new = MessageRecord.timetoken(ofKey: k, prefixLength: prefixLength)
                    if Before.timetoken(ofKey: k, prefixLength: prefixLength) == nil { #expect(new == nil) }
                }
                if Before.parse(key: k) == nil { #expect(MessageRecord.parse(key: k) == nil, "\(input)") }
                if Before.keyspace(of: k) == .max { #expect(SegmentProperties.keyspace(of: k) == .max) }
            }
        }
    }

    @Test func nonShortestFormsAreNowRejected() {
        let padded: [UInt8] = [0x12, 0x00, 0x05]  // 5 in two bytes
        padded.withUnsafeBytes { k in
            var q = 0
            #expect(Before.readUInt(k, at: &q) == 5)
            var p = 0
            #expect(TupleKey.readUInt(k, at: &p) == nil)
            #expect(p == 0)
            #expect(SegmentProperties.keyspace(of: k) == .max)
        }
        let message: [UInt8] = [0x11, 0x03, 0x11, 0x07, 0x12, 0x00, 0x09]  // (3, 7, 9) with 9 padded
        message.withUnsafeBytes { k in
            #expect(Before.parse(key: k) != nil)
            #expect(MessageRecord.parse(key: k) == nil)
        }
    }
}

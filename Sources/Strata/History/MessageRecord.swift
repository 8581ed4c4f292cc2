@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The engine record of one history message (FORMAT.md §15.2):
///
///     key    (3, channelId, timetoken)            tuple encoding, 3 unsigned integers
///     value  flags u8                             bit 0: meta present, bit 1: publisher present,
///                                                 bit 2: provisional (a replicated channel's message
///                                                 the gateway has not ordered yet)
///            [16 bytes]  upload id                if bit 2: the message's idempotency key
///            [varint n, n bytes]  meta            binary JSON (§13.1), if bit 0
///            [varint n, n bytes]  publisher       UTF-8, if bit 1
///            message                              the rest: the channel's ValueCodec form
///
/// The message comes last so it needs no length. Bits 3–7 of `flags` are zero; a reader refuses
/// a record with any of them set. Bit 2 appears only in channels whose catalog payload is layout
/// version 2 (FORMAT.md §15.7).
package enum MessageRecord {
    static let hasMeta: UInt8 = 1
    static let hasPublisher: UInt8 = 2
    static let isProvisional: UInt8 = 4
    /// The length of a provisional message's upload id.
    static let uploadIDLength = 16

    /// `record` (a final message's value) as a provisional one carrying `uploadID`.
    /// REQUIRES: `record` is a well-formed record without bit 2; `uploadID.count == uploadIDLength`.
    static func provisional(_ record: [UInt8], uploadID: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(record.count + uploadIDLength)
        out.append(record[0] | isProvisional)
        out.append(contentsOf: uploadID)
        out.append(contentsOf: record[1...])
        return out
    }

    /// The prefix `(3, channelId)` shared by every key of a channel.
    static func channelPrefix(_ channelId: UInt64) -> [UInt8] {
        var e = TupleKeyEncoder(reservingCapacity: 8)
        e.append(Keyspace.channelMessages.id)
        e.append(channelId)
        return e.bytes
    }

    /// Writes the tuple encoding of `timetoken` into `out` (cleared first).
    @inline(__always)
    static func encodeTimetoken(_ timetoken: UInt64, into out: inout [UInt8]) {
        out.removeAll(keepingCapacity: true)
        TupleKey.appendUInt(timetoken, to: &out)
    }

    /// The timetoken of a key whose channel prefix is `prefixLength` bytes, or nil if the rest of
    /// the key is not exactly one unsigned integer.
    @inline(__always)
    package static func timetoken(ofKey key: UnsafeRawBufferPointer, prefixLength: Int) -> UInt64? {
        var offset = prefixLength
        guard let timetoken = TupleKey.readUInt(key, at: &offset), offset == key.count else { return nil }
        return timetoken
    }

    /// The channel id and timetoken of any key of keyspace 3, or nil if it is not one.
    static func parse(key: UnsafeRawBufferPointer) -> (channelId: UInt64, timetoken: UInt64)? {
        var offset = 0
        guard TupleKey.readUInt(key, at: &offset) == Keyspace.channelMessages.id,
              let id = TupleKey.readUInt(key, at: &offset),
              let tt = timetoken(ofKey: key, prefixLength: offset)
        else { return nil }
        return (id, tt)
    }

    /// Appends a record value.
    static func encode(message: (inout [UInt8]) throws -> Void, meta: JSON?, publisher: String?,
                       into out: inout [UInt8]) rethrows {
        var flags: UInt8 = 0
        if meta != nil { flags |= hasMeta }
        if publisher != nil { flags |= hasPublisher }
        out.append(flags)
        if let meta {
            let start = out.count
            out.append(0)  // a one-byte length, widened below if needed
            meta.appendBinary(to: &out)
            let length = out.count - start - 1
            if length >= 0x80 {
                var prefix: [UInt8] = []
                Varint.append(UInt64(length), to: &prefix)
                out.replaceSubrange(start..<(start + 1), with: prefix)
            } else {
                out[start] = UInt8(length)
            }
        }
        if let publisher { Varint.appendLengthPrefixed(publisher, to: &out) }
        try message(&out)
    }

    /// A provisional record as the final one: without bit 2 and the upload id.
    /// REQUIRES: `record` is a well-formed provisional record.
    static func final(_ record: [UInt8]) -> [UInt8] {
        [record[0] & ~isProvisional] + record[(1 + uploadIDLength)...]
    }

    /// The parts of a record value. `message` is a view into `value`.
    struct Parts {
        /// The upload id of a provisional message; nil for a final one.
        var uploadID: UnsafeRawBufferPointer?
        var meta: JSON?
        var publisher: String?
        var message: UnsafeRawBufferPointer
    }

    /// The last publisher a page decoded, with its bytes. The messages of a page mostly share a
    /// publisher, and comparing its bytes costs less than validating the UTF-8 and allocating the
    /// string again for every message.
    package struct PublisherMemo {
        private var bytes: [UInt8] = []
        private var string: String?

        package init() {}

        /// The publisher of `utf8`, or nil if it is not UTF-8.
        mutating func publisher(_ utf8: UnsafeRawBufferPointer) -> String? {
            if let string, ByteComparison.compare(bytes, utf8) == 0 { return string }
            guard let s = String(validating: utf8, as: UTF8.self) else { return nil }
            bytes = Array(utf8)
            string = s
            return s
        }
    }

    /// Splits a record value; `what` names the record in errors.
    static func decode(_ value: UnsafeRawBufferPointer, what: @autoclosure () -> String) throws -> Parts {
        var publishers = PublisherMemo()
        return try decode(value, what: what(), publishers: &publishers)
    }

    /// Splits a record value, taking the publisher from `publishers` when it is the last one seen.
    static func decode(_ value: UnsafeRawBufferPointer, what: @autoclosure () -> String,
                       publishers: inout PublisherMemo) throws -> Parts {
        // The reader names no record: `what` is built only when a record is bad.
        var r = ByteReader(value, file: "")
        do {
            let flags = try r.uint8("flags")
            guard flags & ~(hasMeta | hasPublisher | isProvisional) == 0 else {
                throw r.corrupted(at: 0, "unknown flags 0x\(String(flags, radix: 16)) in a message record")
            }
            var uploadID: UnsafeRawBufferPointer?
            if flags & isProvisional != 0 { uploadID = try r.bytes(uploadIDLength, "upload id") }
            var meta: JSON?
            var publisher: String?
            if flags & hasMeta != 0 {
                let start = r.offset
                let bytes = try r.lengthPrefixedBytes("meta")
                do {
                    meta = try JSON(binary: bytes)
                } catch {
                    throw r.corrupted(at: start, "bad meta in a message record: \(error)")
                }
            }
            if flags & hasPublisher != 0 {
                let start = r.offset
                guard let s = publishers.publisher(try r.lengthPrefixedBytes("publisher")) else {
                    throw r.corrupted(at: start, "publisher is not UTF-8 in a message record")
                }
                publisher = s
            }
            return Parts(uploadID: uploadID, meta: meta, publisher: publisher, message: r.rest())
        } catch StrataError.corrupted(_, let offset, let reason) {
            throw StrataError.corrupted(file: what(), offset: offset, reason: reason)
        }
    }
}

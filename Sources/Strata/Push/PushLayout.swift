import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The keys and records of push subscriptions, all in keyspace 17:
///
///     (17, 0)                     counters: varint next device ‖ varint next subscription ‖ varint next notification
///     (17, 1, device)             device
///     (17, 2, subscription)       subscription
///     (17, 3, subscription, item) an item's state (MERGE's merged fields, the last-sent time and
///                                 the updates waiting for the frequency limit)
///     (17, 4, notification)       a notification in the outbox
///
/// Records start with a `u8` layout (1). Strings are `varint(byteCount) ‖ UTF-8`; name lists
/// `varint(count) ‖ string*`.
package enum PushLayout {
    package static let layout: UInt8 = 1

    static func key(_ kind: UInt64, _ numbers: UInt64...) -> [UInt8] {
        var e = TupleKeyEncoder()
        e.append(Keyspace.push.id)
        e.append(kind)
        for n in numbers { e.append(n) }
        return e.bytes
    }

    package static let countersKey = key(0)
    package static func deviceKey(_ n: UInt64) -> [UInt8] { key(1, n) }
    package static func subscriptionKey(_ n: UInt64) -> [UInt8] { key(2, n) }
    package static func itemStateKey(_ subscription: UInt64, _ item: Int) -> [UInt8] { key(3, subscription, UInt64(item)) }
    package static func notificationKey(_ n: UInt64) -> [UInt8] { key(4, n) }
    package static func prefix(_ kind: UInt64) -> [UInt8] { key(kind) }
    package static func prefix(_ kind: UInt64, _ n: UInt64) -> [UInt8] { key(kind, n) }

    // MARK: Ids

    package static func deviceID(_ n: UInt64) -> String { "D\(n)" }
    package static func subscriptionID(_ n: UInt64) -> String { "S\(n)" }
    package static func number(_ id: String, prefix: Character) -> UInt64? {
        guard id.first == prefix, id.count > 1, let n = UInt64(id.dropFirst()), id == "\(prefix)\(n)" else { return nil }
        return n
    }

    // MARK: Writing

    struct Writer {
        var bytes: [UInt8] = [PushLayout.layout]
        mutating func u8(_ v: UInt8) { bytes.append(v) }
        mutating func varint(_ v: UInt64) { Varint.append(v, to: &bytes) }
        mutating func signed(_ v: Int64) { Varint.append(ZigZag.encode(v), to: &bytes) }
        mutating func string(_ s: String) { Varint.appendLengthPrefixed(s, to: &bytes) }
        mutating func names(_ list: [String]) {
            varint(UInt64(list.count))
            for s in list { string(s) }
        }
        mutating func double(_ d: Double) { LittleEndian.append(d.bitPattern, to: &bytes) }
    }

    // MARK: Reading

    /// Runs `body` with a reader after the layout byte of record `bytes`, which errors name `what`.
    ///
    /// - Throws: ``StrataError/corrupted(file:offset:reason:)`` for an empty record,
    ///   ``StrataError/unsupportedFormatVersion(file:found:)`` for another layout.
    static func read<R>(_ bytes: [UInt8], what: String, _ body: (inout ByteReader) throws -> R) throws -> R {
        guard let first = bytes.first else { throw StrataError.corrupted(file: what, offset: 0, reason: "empty record") }
        guard first == PushLayout.layout else {
            throw StrataError.unsupportedFormatVersion(file: what, found: UInt32(first))
        }
        return try ByteReader.read(bytes, file: what, offset: 1, body)
    }

    /// Reads a name list: `varint(count) ‖ string*`.
    static func names(_ r: inout ByteReader, _ field: String) throws -> [String] {
        var out: [String] = []
        for _ in 0..<(try r.count(field + " count")) { out.append(try r.string(field)) }
        return out
    }

    /// The number of the stored key `(17, kind, number)`: the one rule for every reader of
    /// device, subscription and outbox keys. A key of another shape under the kind's prefix is
    /// damage: a read throws ``StrataError/corrupted(file:offset:reason:)`` naming the records and
    /// the key (so does opening the store when its push state is loaded); no reader skips it.
    package static func number(ofKey key: [UInt8], kind: UInt64) throws -> UInt64 {
        let prefix = PushLayout.prefix(kind)
        if key.starts(with: prefix) {
            var d = TupleKeyDecoder(key[prefix.count...])
            if let n = try? d.nextUInt(), d.isAtEnd { return n }
        }
        let records = switch kind {
        case 1: "push devices"
        case 2: "push subscriptions"
        case 4: "push outbox"
        default: "push records"
        }
        throw StrataError.corrupted(file: records, offset: 0, reason: "bad key \(TupleKey.describe(key))")
    }

    /// Calls `body` with the number and value of each record `(17, kind, number)` of `snapshot`,
    /// in number order.
    package static func scan(_ snapshot: Snapshot, kind: UInt64, _ body: (UInt64, [UInt8]) throws -> Void) throws {
        let prefix = PushLayout.prefix(kind)
        let cursor = snapshot.cursor(lower: prefix, upper: TupleKey.prefixSuccessor(prefix), fillCache: false)
        while try cursor.next() {
            // The common case decoded here (the prefix made once); any other key goes through
            // the one rule, which throws.
            let key = cursor.withKey { Array($0) }
            var n: UInt64?
            if key.count > prefix.count, key.starts(with: prefix) {
                var d = TupleKeyDecoder(key[prefix.count...])
                if let x = try? d.nextUInt(), d.isAtEnd { n = x }
            }
            try body(try n ?? number(ofKey: key, kind: kind), Array(cursor.value))
        }
    }
}

import Foundation
import StrataFormat
import StrataFiles
import StrataEngine

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

    struct Reader {
        let bytes: [UInt8]
        let what: String
        var offset = 1

        init(_ bytes: [UInt8], what: String) throws {
            self.bytes = bytes
            self.what = what
            guard let first = bytes.first else { throw StrataError.corrupted(file: what, offset: 0, reason: "empty record") }
            guard first == PushLayout.layout else {
                throw StrataError.unsupportedFormatVersion(file: what, found: UInt32(first))
            }
        }

        func fail(_ reason: String) -> StrataError { .corrupted(file: what, offset: offset, reason: reason) }

        mutating func u8() throws -> UInt8 {
            guard offset < bytes.count else { throw fail("truncated") }
            defer { offset += 1 }
            return bytes[offset]
        }

        mutating func varint() throws -> UInt64 {
            guard let v = bytes.withUnsafeBytes({ Varint.read($0, at: &offset) }) else { throw fail("bad varint") }
            return v
        }

        mutating func signed() throws -> Int64 { ZigZag.decode(try varint()) }

        mutating func count() throws -> Int {
            let n = try varint()
            guard n <= UInt64(bytes.count - offset) else { throw fail("count \(n) exceeds the \(bytes.count - offset) bytes left") }
            return Int(n)
        }

        mutating func string() throws -> String {
            let n = try count()
            guard let s = String(validating: bytes[offset..<offset + n], as: UTF8.self) else { throw fail("a string is not UTF-8") }
            offset += n
            return s
        }

        mutating func names() throws -> [String] {
            var out: [String] = []
            for _ in 0..<(try count()) { out.append(try string()) }
            return out
        }

        mutating func double() throws -> Double {
            guard bytes.count - offset >= 8 else { throw fail("truncated") }
            defer { offset += 8 }
            return bytes.withUnsafeBytes { Double(bitPattern: LittleEndian.uint64($0, at: offset)) }
        }

        func end() throws {
            guard offset == bytes.count else { throw fail("\(bytes.count - offset) bytes after the record") }
        }
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
        let cursor = snapshot.cursor(lower: prefix, upper: TupleKey.prefixSuccessor(prefix))
        while try cursor.next() {
            let key = cursor.withKey { Array($0) }
            try body(try number(ofKey: key, kind: kind), Array(cursor.value))
        }
    }
}

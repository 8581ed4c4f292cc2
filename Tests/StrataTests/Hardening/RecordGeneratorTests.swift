import Foundation
import Testing
@testable import Strata
@testable import StrataInspection
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// Issue 23: crafted records of every push record layout of FORMAT.md §18 (and the documents'
// change feed and dates, §16), generated field by field: each field in turn takes 0, 1, 2^63 − 1,
// 2^63 and 2^64 − 1 (numbers), NaN, ±∞ and other edge values (floats), and its own worst case
// (empty and oversized strings, text that is not UTF-8, counts past the bytes), the others keeping
// a valid value; so do the numbers in the keys. Each record is written through the commit path
// (valid checksums) into a store that has a device and a subscription, and then the store is
// opened, every push read and a write are tried, and every `strata-dump` verb runs. Any outcome
// is fine but a trap, an error that is not typed, or a refused open that changed a byte.

/// One field of a record layout, with its valid value.
private enum Field {
    case u8(UInt8)
    case varint(UInt64)
    case signed(Int64)
    case string(String)
    case names([String])
    case f64(Double)
    /// Bytes written as they are (a field's worst case that the typed cases cannot spell).
    case raw([UInt8])

    func encode(into w: inout PushLayout.Writer) {
        switch self {
        case .u8(let v): w.u8(v)
        case .varint(let v): w.varint(v)
        case .signed(let v): w.signed(v)
        case .string(let s): w.string(s)
        case .names(let n): w.names(n)
        case .f64(let d): w.double(d)
        case .raw(let b): w.bytes += b
        }
    }

    /// The values the field is tried with.
    var variants: [Field] {
        switch self {
        case .u8: return [0, 1, 2, 3, 255].map { .u8($0) }
        case .varint: return Hardening.extremes.map { .varint($0) }
        case .signed: return [0, 1, -1, Int64.max, Int64.min, Int64.max - 1].map { .signed($0) }
        case .string: return [.string(""), .string(String(repeating: "a", count: 4_097)), .raw([1, 0xFF]), .raw([0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02]), .raw([50])]
        case .names: return [.names([]), .names([""]), .names(["a b", "c"]), .raw([0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01])]
        case .f64: return [Double.nan, .infinity, -.infinity, 0, -0.0, .greatestFiniteMagnitude, .leastNonzeroMagnitude, -1].map { .f64($0) }
        case .raw: return []
        }
    }
}

/// A record layout: its key's kind and numbers (`nil` marks the number that varies), its fields.
private struct Layout {
    let name: String
    let kind: UInt64
    let numbers: [UInt64]
    let fields: [Field]

    func key(_ numbers: [UInt64]) -> [UInt8] {
        Keyspace.push.prefix + Hardening.uint(kind) + numbers.flatMap(Hardening.uint)
    }

    func value(_ fields: [Field]) -> [UInt8] {
        var w = PushLayout.Writer()
        w.bytes = []
        for f in fields { f.encode(into: &w) }
        return w.bytes
    }
}

/// The layouts of §18, each valid against the store of `Hardening.pushStore()` (D1, S1 on AAPL).
private let layouts: [Layout] = [
    Layout(name: "counters", kind: 0, numbers: [], fields: [.u8(1), .varint(3), .varint(3), .varint(3)]),
    Layout(name: "device", kind: 1, numbers: [2], fields: [.u8(1), .u8(2), .string("app"), .string("tok"), .u8(0), .varint(0)]),
    Layout(name: "subscription", kind: 2, numbers: [2], fields: [
        .u8(1), .varint(1), .u8(1), .u8(1), .names(["AAPL"]), .names(["value"]),
        .string(PushFormat.apple(alert: "${value}")), .u8(0), .varint(0), .u8(2), .f64(1), .u8(2), .signed(1_000),
    ]),
    Layout(name: "item state", kind: 3, numbers: [1, 0], fields: [.u8(1), .names(["9.5"]), .u8(1), .signed(1_000), .varint(1), .names(["1"])]),
    Layout(name: "notification", kind: 4, numbers: [1], fields: [
        .u8(1), .varint(1), .varint(1), .u8(1), .string("com.example"), .string("ab12"), .string("AAPL"), .string("{}"), .signed(1_000),
    ]),
]

/// One crafted record.
struct CraftedPushRecord: CustomTestStringConvertible, Sendable {
    let label: String
    let key: [UInt8]
    let value: [UInt8]
    var testDescription: String { label }
}

/// Every field of every layout with each of its variants, and every key number with each
/// extreme. Deterministic: no sampling is needed (a few hundred cases, one field at a time).
private let cases: [CraftedPushRecord] = layouts.flatMap { layout -> [CraftedPushRecord] in
    var out: [CraftedPushRecord] = [CraftedPushRecord(label: "\(layout.name) valid", key: layout.key(layout.numbers), value: layout.value(layout.fields))]
    for (i, field) in layout.fields.enumerated() {
        for v in field.variants {
            var fields = layout.fields
            fields[i] = v
            out.append(CraftedPushRecord(label: "\(layout.name) field \(i) = \(v)", key: layout.key(layout.numbers), value: layout.value(fields)))
        }
    }
    for (i, _) in layout.numbers.enumerated() {
        for n in Hardening.extremes {
            var numbers = layout.numbers
            numbers[i] = n
            out.append(CraftedPushRecord(label: "\(layout.name) key number \(i) = \(n)", key: layout.key(numbers), value: layout.value(layout.fields)))
        }
    }
    // Truncated and extended records.
    let valid = layout.value(layout.fields)
    out.append(CraftedPushRecord(label: "\(layout.name) cut short", key: layout.key(layout.numbers), value: Array(valid.dropLast())))
    out.append(CraftedPushRecord(label: "\(layout.name) with a byte after", key: layout.key(layout.numbers), value: valid + [0]))
    return out
}

@Suite struct RecordGeneratorTests {
    /// The store every case starts from, made once.
    private static let base: TemporaryDirectory = {
        // A failure here fails every case through `copy`.
        (try? Hardening.pushStore()) ?? (try! TemporaryDirectory())
    }()

    @Test("every push record layout, every field at its extremes: open, read, write and every strata-dump verb refuse or work, never trap", arguments: cases)
    func pushRecord(_ c: CraftedPushRecord) throws {
        let dir = try Hardening.copy(Self.base)
        defer { dir.remove() }
        try Hardening.writeRaw(dir, [(c.key, c.value)])
        let before = try Hardening.files(dir)
        var store: Store?
        let refusal = Hardening.typed("open") { store = try Store.open(at: dir.url) }
        if let refusal {
            #expect(try Hardening.files(dir) == before, "refused open (\(refusal)) changed files")
        }
        if c.label.hasSuffix(" valid") { #expect(refusal == nil, "the valid record is refused: \(String(describing: refusal))") }
        #expect(before[FileNames.manifest] != nil && before.count >= 3, "the base store")
        if let store {
            Hardening.typed("read") {
                let push = try store.pushNotifications()
                _ = try push.subscriptions(device: "D1")
                _ = try push.subscriptions(device: "D2")
                _ = try push.pendingNotifications(limit: 10)
            }
            Hardening.typed("write") {
                let push = try store.pushNotifications()
                _ = try push.register(PushDevice(platform: .google, applicationID: "x", deviceToken: "y"))
                try store.timeSeries("AAPL", of: Double.self).append(2)
                var s = PushSubscription(mode: .distinct, items: ["B"], fields: ["value"])
                s.notificationFormat = PushFormat.google(body: "${value}")
                _ = try push.subscribe(s, device: "D1")
            }
            try? store.close()
        }
        Hardening.everyDumpVerb(dir)
    }

    @Test("change-feed keys at every extreme and document dates at every float edge: open, read, write and every dump verb never trap",
          arguments: Hardening.extremes.map { Optional($0) } + [nil])
    func documentRecords(_ sequence: UInt64?) throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var key: [UInt8] = [], id: UInt64 = 0
        do {
            let store = try Store.open(at: dir.url)
            defer { try? store.close() }
            _ = try store.documents("db").save(Document(id: "a", fields: ["n": .int(1)]))
            let prefix = Keyspace.documents.prefix
            let cursor = try store.engine.snapshot().cursor(lower: prefix, upper: TupleKey.prefixSuccessor(prefix))
            #expect(try cursor.next())
            key = cursor.withKey { Array($0) }
            var d = TupleKeyDecoder(key[prefix.count...])
            id = try d.nextUInt()
        }
        if let sequence {
            try Hardening.writeRaw(dir, [(DocumentLayout.changeKey(id, sequence),
                                          DocumentLayout.changeValue(id: "z", isDeletion: false, revision: 1))])
        } else {
            var value = try #require(try Hardening.stored(dir, key))
            let edges: [Double] = [.nan, .infinity, -.infinity, .greatestFiniteMagnitude, -.greatestFiniteMagnitude]
            for (n, at) in [3, 11].enumerated() {
                let bits = edges[n].bitPattern
                for i in 0..<8 { value[at + i] = UInt8(truncatingIfNeeded: bits >> (8 * UInt64(i))) }
            }
            try Hardening.writeRaw(dir, [(key, value)])
        }
        let before = try Hardening.files(dir)
        var store: Store?
        if Hardening.typed("open", { store = try Store.open(at: dir.url) }) != nil {
            #expect(try Hardening.files(dir) == before)
        }
        if let store {
            Hardening.typed("read") {
                let db = try store.documents("db")
                _ = try db.document(id: "a")
                _ = try db.document(id: "z")
            }
            Hardening.typed("write") {
                let db = try store.documents("db")
                _ = try db.save(Document(id: "b", fields: [:]))
                try db.delete(id: "a")
            }
            try? store.close()
        }
        Hardening.everyDumpVerb(dir)
    }
}

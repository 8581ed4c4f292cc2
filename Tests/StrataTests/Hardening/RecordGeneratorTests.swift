import Foundation
import Testing
@testable import Strata
@testable import StrataInspection
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// Issue 23: crafted records of every push record layout of FORMAT.md §18 (and the documents'
// change feed and dates, §16), generated field by field by the generator of RecordLayouts.swift
// (which LayoutGeneratorTests runs over every other keyspace): each field in turn takes 0, 1, 2^63 − 1,
// 2^63 and 2^64 − 1 (numbers), NaN, ±∞ and other edge values (floats), and its own worst case
// (empty and oversized strings, text that is not UTF-8, counts past the bytes), the others keeping
// a valid value; so do the numbers in the keys. Each record is written through the commit path
// (valid checksums) into a store that has a device and a subscription, and then the store is
// opened, every push read and a write are tried, and every `strata-dump` verb runs. Any outcome
// is fine but a trap, an error that is not typed, or a refused open that changed a byte.

/// A layout of §18: the key `(17, kind, numbers…)`, the fields (RecordLayouts.swift).
private func push(_ name: String, kind: UInt64, numbers: [UInt64], _ fields: [Field]) -> Layout {
    Layout(name: name, key: [.bytes(Keyspace.push.prefix + Hardening.uint(kind))] + numbers.map { .number($0) }, fields: fields)
}

/// The layouts of §18, each valid against the store of `Hardening.pushStore()` (D1, S1 on AAPL).
private let layouts: [Layout] = [
    push("counters", kind: 0, numbers: [], [.u8(1), .varint(3), .varint(3), .varint(3)]),
    push("device", kind: 1, numbers: [2], [.u8(1), .u8(2), .string("app"), .string("tok"), .u8(0), .varint(0)]),
    push("subscription", kind: 2, numbers: [2], [
        .u8(1), .varint(1), .u8(1), .u8(1), .names(["AAPL"]), .names(["value"]),
        .string(PushFormat.apple(alert: "${value}")), .u8(0), .varint(0), .u8(2), .f64(1), .u8(2), .signed(1_000),
    ]),
    push("item state", kind: 3, numbers: [1, 0], [.u8(1), .names(["9.5"]), .u8(1), .signed(1_000), .varint(1), .names(["1"])]),
    push("notification", kind: 4, numbers: [1], [
        .u8(1), .varint(1), .varint(1), .u8(1), .string("com.example"), .string("ab12"), .string("AAPL"), .string("{}"), .signed(1_000),
    ]),
]

/// Every field of every layout with each of its variants, and every key number with each
/// extreme. Deterministic: no sampling is needed (a few hundred cases, one field at a time).
private let cases: [CraftedRecord] = layouts.flatMap(\.cases)

@Suite struct RecordGeneratorTests {
    /// The store every case starts from, made once.
    private static let base: TemporaryDirectory = {
        // A failure here fails every case through `copy`.
        (try? Hardening.pushStore()) ?? (try! TemporaryDirectory())
    }()

    @Test("every push record layout, every field at its extremes: open, read, write and every strata-dump verb refuse or work, never trap", arguments: cases)
    func pushRecord(_ c: CraftedRecord) throws {
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
        #expect(before[FileNames.manifest] != nil && before.count >= 2, "the base store: a manifest and a log")
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
        let (dir, key) = try Hardening.oneDocumentStore()
        defer { dir.remove() }
        var d = TupleKeyDecoder(key[Keyspace.documents.prefix.count...])
        let id = try d.nextUInt()
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

import Foundation
import Testing
@testable import Strata

/// The in-memory subscription table and its shared specs (what lets a store hold a million
/// subscriptions in little memory and open quickly).
@Suite struct PushSubscriptionTableTests {
    static func spec(_ item: String = "s/x") -> PushSubscriptionSpec {
        var s = PushSubscription(mode: .merge, items: [item], fields: ["value"])
        s.notificationFormat = #"{"v":"${value}"}"#
        let template = try! NotificationTemplate(s.notificationFormat!, fields: s.fields)
        return PushSubscriptionSpec(s, template: template, trigger: nil)
    }

    static func entry(_ n: UInt64, device: UInt64 = 1, spec: PushSubscriptionSpec) -> PushModel.SubscriptionEntry {
        PushModel.SubscriptionEntry(number: n, device: device, spec: spec, status: .subscribed, statusTime: Int64(n))
    }

    @Test("an entry is 56 bytes, and a hole in the table costs nothing more")
    func entrySize() {
        #expect(MemoryLayout<PushModel.SubscriptionEntry>.stride <= 56)
        #expect(MemoryLayout<PushModel.SubscriptionEntry?>.stride == MemoryLayout<PushModel.SubscriptionEntry>.stride)
    }

    @Test("random inserts, replacements, deletions and lookups agree with a dictionary; iteration is in number order",
          arguments: [1, 2, 3])
    func model(seed: UInt64) {
        var rng = SplitMix64(seed: seed)
        let spec = Self.spec()
        var table = PushSubscriptionTable()
        var reference: [UInt64: PushModel.SubscriptionEntry] = [:]
        var next: UInt64 = 1
        for _ in 0..<20_000 {
            switch rng.below(10) {
            case 0..<5:   // a new subscription: the next number
                table[next] = Self.entry(next, spec: spec)
                reference[next] = Self.entry(next, spec: spec)
                next += 1 + UInt64(rng.below(3))
            case 5..<7:   // a deletion, of a live number or not
                let n = UInt64(rng.below(Int(next) + 2))
                #expect(table.removeValue(forKey: n)?.number == reference.removeValue(forKey: n)?.number)
            case 7:       // a replacement
                let n = UInt64(rng.below(Int(next) + 1))
                if reference[n] != nil {
                    table[n]?.device = 7
                    reference[n]?.device = 7
                }
            case 8:       // an out-of-order insert (as a reopen of an older number would be)
                let n = UInt64(rng.below(Int(next) + 1))
                if reference[n] == nil, n > 0 {
                    table[n] = Self.entry(n, device: 9, spec: spec)
                    reference[n] = Self.entry(n, device: 9, spec: spec)
                }
            default:
                let n = UInt64(rng.below(Int(next) + 1))
                #expect(table[n]?.device == reference[n]?.device)
            }
            #expect(table.count == reference.count)
        }
        #expect(table.map(\.key) == reference.keys.sorted())
        #expect(table.values.map(\.device) == reference.keys.sorted().map { reference[$0]!.device })
        #expect(table.isEmpty == reference.isEmpty)
    }

    @Test("a sorted load keeps every entry; deleting most of them compacts and keeps the rest")
    func loadAndCompact() {
        let spec = Self.spec()
        var table = PushSubscriptionTable(sorted: (1...5_000).map { Self.entry(UInt64($0), spec: spec) })
        #expect(table.count == 5_000)
        for n in 1...4_900 { table[UInt64(n)] = nil }
        #expect(table.count == 100)
        #expect(table.map(\.key) == (4_901...5_000).map(UInt64.init))
        #expect(table[4_950]?.number == 4_950 && table[10] == nil)
    }

    @Test("after a reopen, subscriptions stored with the same spec share one, and others do not")
    func sharedSpecs() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var store = try Store.open(at: dir.url)
        var push = try store.pushNotifications()
        let device = try push.register(PushDevice(platform: .apple, applicationID: "app", deviceToken: "t1"))
        var a = PushSubscription(mode: .merge, items: ["s/a"], fields: ["value"])
        a.notificationFormat = #"{"aps":{"alert":"${value}"}}"#
        var b = a
        b.items = ["s/b"]
        let ids = try [a, a, b].map { try push.subscribe($0, device: device.id).subscriptionID! }
        try store.close()
        store = try Store.open(at: dir.url)
        defer { try? store.close() }
        push = try store.pushNotifications()
        let m = push.state.image.model.withLock { $0 }
        let specs = ids.map { m.subscriptions[PushLayout.number($0, prefix: "S")!]!.spec }
        #expect(specs[0] === specs[1])
        #expect(specs[0] !== specs[2])
        #expect(try push.subscriptions(device: device.id).map(\.items) == [["s/a"], ["s/a"], ["s/b"]])
        #expect(try push.subscriptions(device: device.id).map(\.subscriptionID) == ids)
    }
}

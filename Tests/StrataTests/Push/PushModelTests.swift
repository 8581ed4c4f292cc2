import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// Random sequences of device, subscription and update operations, with reopens, against a
/// reference model written from API.md ("Push subscriptions"): the outbox must hold exactly the
/// notifications the model predicts, in order, with the model's payloads.
@Suite struct PushModelTests {
    struct ModelSubscription {
        var id: String
        var device: String
        var mode: PushSubscription.Mode
        var adapter: PushSubscription.DataAdapter
        var items: [String]
        var fields: [String]
        var threshold: Double?       // trigger: Double.parseDouble(${price}) > threshold
        var triggered = false
        var merged: [String: [String]] = [:]
    }

    struct ModelDevice {
        var id: String
        var platform: PushDevice.Platform
        var token: String
        var suspended = false
        var badge = 0
    }

    struct Model {
        var devices: [ModelDevice] = []
        var subscriptions: [ModelSubscription] = []    // in creation order
        var outbox: [(subscription: String, item: String, payload: JSON)] = []
    }

    static let series = ["p/a", "p/b", "p/c"]
    static let channel = "ch"
    static let fieldPool = ["name", "price", "author", "sequence", "publisher"]

    static func format(_ platform: PushDevice.Platform) -> String {
        platform == .apple
            ? #"{"aps":{"alert":"${name}|${price}|$[1]","badge":"AUTO"},"id":"${LS_MPN_subscription_ID}"}"#
            : #"{"data":{"text":"${name}|${price}|$[1]","id":"${LS_MPN_subscription_ID}"}}"#
    }

    /// The payload the model predicts (as JSON, so key order does not matter).
    static func payload(_ device: inout ModelDevice, _ sub: ModelSubscription, _ values: [String: String]) -> JSON {
        let v = sub.fields.map { values[$0] ?? "" }
        let text = "\(values["name"] ?? "")|\(values["price"] ?? "")|\(v[0])"
        if device.platform == .apple {
            device.badge += 1
            return ["aps": ["alert": .string(text), "badge": .int(Int64(device.badge))], "id": .string(sub.id)]
        }
        return ["data": ["text": .string(text), "id": .string(sub.id)]]
    }

    @Test("random operations and reopens: the outbox is what the model predicts", arguments: [1, 2, 3, 4] as [UInt64])
    func randomized(seed: UInt64) throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        var rng = SplitMix64(seed: seed)
        var store = try Store.open(at: dir.url, options: StoreOptions(durability: .buffered))
        defer { try? store.close() }
        var push = try store.pushNotifications()
        var model = Model()
        var acknowledged = 0   // model.outbox entries before this index are acknowledged
        for step in 0..<300 {
            switch rng.below(20) {
            case 0, 1:   // register (a new or a known device; resumes a suspended one)
                let platform: PushDevice.Platform = rng.below(2) == 0 ? .apple : .google
                let token = "t\(rng.below(4))"
                let registered = try push.register(PushDevice(platform: platform, applicationID: "app", deviceToken: token))
                if let i = model.devices.firstIndex(where: { $0.platform == platform && $0.token == token }) {
                    #expect(registered.id == model.devices[i].id, "step \(step)")
                    model.devices[i].suspended = false
                } else {
                    #expect(!model.devices.contains { $0.id == registered.id })
                    model.devices.append(ModelDevice(id: registered.id, platform: platform, token: token))
                }
            case 2:   // suspend
                guard !model.devices.isEmpty else { continue }
                let i = rng.below(model.devices.count)
                try push.suspend(device: model.devices[i].id)
                model.devices[i].suspended = true
            case 3:   // reset the badge
                guard !model.devices.isEmpty else { continue }
                let i = rng.below(model.devices.count)
                try push.resetBadge(device: model.devices[i].id)
                model.devices[i].badge = 0
            case 4, 5:   // subscribe
                guard !model.devices.isEmpty else { continue }
                let device = model.devices[rng.below(model.devices.count)]
                let history = rng.below(4) == 0
                let items = history ? [Self.channel] : Array(Set((0..<(1 + rng.below(2))).map { _ in Self.series[rng.below(3)] })).sorted()
                var fields = ["name", "price"]
                fields.insert(Self.fieldPool[rng.below(Self.fieldPool.count)], at: 0)
                var sub = PushSubscription(mode: rng.below(2) == 0 ? .merge : .distinct, items: items, fields: fields)
                sub.dataAdapter = history ? .history : .timeSeries
                sub.notificationFormat = Self.format(device.platform)
                let threshold: Double? = rng.below(3) == 0 ? Double(rng.below(100)) : nil
                if let threshold { sub.triggerExpression = "Double.parseDouble(${price}) > \(threshold)" }
                let made = try push.subscribe(sub, device: device.id)
                #expect(made.status == .subscribed)
                model.subscriptions.append(ModelSubscription(id: made.subscriptionID ?? "", device: device.id, mode: sub.mode,
                                                             adapter: sub.dataAdapter, items: items, fields: fields, threshold: threshold))
            case 6:   // modify: a new trigger re-arms it
                guard !model.subscriptions.isEmpty else { continue }
                let i = rng.below(model.subscriptions.count)
                let threshold = Double(rng.below(100))
                let modified = try push.modify(model.subscriptions[i].id, triggerExpression: "Double.parseDouble(${price}) > \(threshold)",
                                               notificationFormat: nil)
                #expect(modified.status == .subscribed)
                model.subscriptions[i].threshold = threshold
                model.subscriptions[i].triggered = false
            case 7:   // unsubscribe one, or all of a device by status
                guard !model.subscriptions.isEmpty else { continue }
                if rng.below(2) == 0 {
                    let i = rng.below(model.subscriptions.count)
                    try push.unsubscribe(model.subscriptions[i].id)
                    model.subscriptions.remove(at: i)
                } else {
                    let device = model.subscriptions[rng.below(model.subscriptions.count)].device
                    let status: PushSubscription.Status? = [nil, .subscribed, .triggered][rng.below(3)]
                    let removed = try push.unsubscribeAll(device: device, status: status)
                    let before = model.subscriptions.count
                    model.subscriptions.removeAll {
                        $0.device == device && (status == nil || ($0.triggered ? PushSubscription.Status.triggered : .subscribed) == status)
                    }
                    #expect(removed == before - model.subscriptions.count, "step \(step)")
                }
            case 8:   // acknowledge the oldest few
                let pending = try push.pendingNotifications(limit: 1 + rng.below(5))
                for n in pending { try push.acknowledge(n) }
                acknowledged += pending.count
            case 9:   // reopen
                try store.close()
                store = try Store.open(at: dir.url, options: StoreOptions(durability: .buffered))
                if rng.below(2) == 0 { try store.timeSeries(Self.series[0], of: JSON.self).append(["name": "early"]); try apply(&model, item: Self.series[0], adapter: .timeSeries, fields: ["name": "early"], store: store) }
                push = try store.pushNotifications()
            default:   // an update: a series event (maybe in a transaction) or a message
                var value: [String: JSON] = [:]
                if rng.below(3) > 0 { value["name"] = .string("n\(rng.below(10))") }
                if rng.below(3) > 0 { value["price"] = .string(String(rng.below(100))) }
                if rng.below(5) == 0 {
                    let tt = try store.channel(Self.channel, of: JSON.self).publish(.object(value), publisher: "pub")
                    var fields = value.mapValues { PushFields.fieldText($0) }
                    fields["timetoken"] = String(tt.rawValue)
                    fields["publisher"] = "pub"
                    try apply(&model, item: Self.channel, adapter: .history, fields: fields, store: store)
                } else {
                    let path = Self.series[rng.below(3)]
                    let m = try store.timeSeries(path, of: JSON.self).append(.object(value))
                    var fields = value.mapValues { PushFields.fieldText($0) }
                    fields["sequence"] = String(m.sequence)
                    fields["timestamp"] = String(SeriesTime.milliseconds(m.timestamp) ?? 0)
                    fields["author"] = m.author
                    try apply(&model, item: path, adapter: .timeSeries, fields: fields, store: store)
                }
            }
            if step % 10 == 0 || step == 299 {
                let pending = try push.pendingNotifications(limit: 100_000)
                let expected = model.outbox[acknowledged...]
                #expect(pending.count == expected.count, "seed \(seed) step \(step)")
                for (n, e) in zip(pending, expected) {
                    #expect(n.subscriptionID == e.subscription && n.item == e.item, "seed \(seed) step \(step)")
                    #expect(try JSON(parsing: n.payload) == e.payload, "seed \(seed) step \(step): \(n.payload)")
                }
                #expect(zip(pending, pending.dropFirst()).allSatisfy { $0.id < $1.id })
            }
        }
    }

    /// The model's matching of one update (series path or channel name) with its fields.
    func apply(_ model: inout Model, item: String, adapter: PushSubscription.DataAdapter, fields: [String: String], store: Store) throws {
        for i in model.subscriptions.indices where model.subscriptions[i].adapter == adapter && model.subscriptions[i].items.contains(item) {
            var sub = model.subscriptions[i]
            guard !sub.triggered, let d = model.devices.firstIndex(where: { $0.id == sub.device }), !model.devices[d].suspended else { continue }
            var values: [String: String]
            switch sub.mode {
            case .merge:
                var merged = sub.merged[item] ?? Array(repeating: "", count: sub.fields.count)
                for (j, f) in sub.fields.enumerated() { if let v = fields[f] { merged[j] = v } }
                sub.merged[item] = merged
                values = Dictionary(zip(sub.fields, merged), uniquingKeysWith: { a, _ in a })
            case .distinct:
                values = Dictionary(sub.fields.map { ($0, fields[$0] ?? "") }, uniquingKeysWith: { a, _ in a })
            }
            defer { model.subscriptions[i] = sub }
            if let threshold = sub.threshold {
                guard let p = Double(values["price"] ?? ""), p > threshold else { continue }
                sub.triggered = true
            }
            model.outbox.append((sub.id, item, Self.payload(&model.devices[d], sub, values)))
        }
    }
}

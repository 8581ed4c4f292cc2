import Foundation
@_spi(Layers) import StrataFormat

/// `strata-dump push <store> [--limit N]`: devices, subscriptions and the outbox of a store.
extension PushInspector: CollectionInspector {
    package static let commandName = "push"
    package static let abstract = "Print the push subscriptions of a store: devices, subscriptions, the outbox."
    package static let discussion = """
        Devices (id, platform, application, token, status, last badge number), subscriptions \
        (id, device, mode, adapter, items, fields, status and its time, trigger, format, \
        notifications pending in the outbox) and the oldest notifications of the outbox \
        (FORMAT.md 18). Payloads and formats are clipped in tables; --json has them whole.
        """
    static let defaultLimit = 20
    package static let usage = CollectionInspectorUsage(
        limit: .init(help: "Print only the oldest N notifications of the outbox (default \(defaultLimit)).",
                     defaultValue: defaultLimit, minimum: 0))

    package static func run(storeAt store: String, arguments: CollectionInspectorArguments, json: Bool) throws -> String {
        let push = try PushInspector.push(ofStoreAt: store, limit: arguments.limit ?? defaultLimit)
        return json ? try InspectionJSON.text(push) : Self.render(push)
    }

    static func time(_ ms: Int64?) -> String {
        guard let ms else { return "-" }
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f.string(from: Date(timeIntervalSince1970: Double(ms) / 1000))
    }

    static func render(_ p: InspectedPush) -> String {
        var out = "Devices: \(p.devices.count)\n"
        if !p.devices.isEmpty {
            var t = TextTable(["ID", "PLATFORM", "APPLICATION", "TOKEN", "STATUS", "BADGE>"])
            for d in p.devices {
                t.add([d.id, d.platform, Format.clip(d.applicationID, 40), Format.clip(d.deviceToken, 24), d.status, "\(d.badge)"])
            }
            out += t.render()
        }
        out += "\nSubscriptions: \(p.subscriptions.count)\n"
        if !p.subscriptions.isEmpty {
            var t = TextTable(["ID", "DEVICE", "MODE", "ADAPTER", "ITEMS", "FIELDS", "STATUS", "STATUS TIME", "TRIGGER",
                               "FORMAT", "PENDING>"])
            for s in p.subscriptions {
                t.add([s.id, s.device, s.mode, s.adapter, Format.clip(s.items.joined(separator: " "), 32),
                       Format.clip(s.fields.joined(separator: " "), 32), s.status, time(s.statusTime),
                       Format.clip(s.trigger ?? "-", 40), Format.clip(s.format, 40), Format.count(s.pending)])
            }
            out += t.render()
        }
        out += "\nOutbox: \(Format.count(p.pending)) pending, next id \(p.nextNotification)"
            + (p.outbox.count < p.pending ? " (the oldest \(p.outbox.count) shown)" : "") + "\n"
        if !p.outbox.isEmpty {
            var t = TextTable(["ID>", "DEVICE", "SUBSCRIPTION", "ITEM", "CREATED", "PAYLOAD"])
            for n in p.outbox {
                t.add(["\(n.id)", n.device, n.subscription, Format.clip(n.item, 32), time(n.created), Format.clip(n.payload, 60)])
            }
            out += t.render()
        }
        return out
    }
}

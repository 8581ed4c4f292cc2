import Foundation
import StrataFormat
import StrataFiles
import StrataEngine

/// The record encodings of push state (keys in ``PushLayout``), and the fields of an update.
///
///     device        u8 layout ‖ u8 platform (1 Apple, 2 Google) ‖ string application ‖ string token
///                   ‖ u8 suspended (0/1) ‖ varint last badge number
///     subscription  u8 layout ‖ varint device ‖ u8 mode (1 MERGE, 2 DISTINCT) ‖ u8 adapter (1 time
///                   series, 2 history) ‖ names items ‖ names fields ‖ string format ‖ u8 trigger?
///                   [‖ string trigger] ‖ varint buffer (0 default, 1 unlimited, n + 2 limited n)
///                   ‖ u8 frequency (0 default, 1 unlimited, 2 limited ‖ f64) ‖ u8 status (2
///                   subscribed, 3 triggered) ‖ zigzag varint status time (ms); FORMAT.md §18
///     item state    u8 layout ‖ names merged field texts (MERGE; an empty list for DISTINCT)
///                   ‖ u8 sent (0 none, 1 ‖ zigzag last-sent time in ms) ‖ varint waiting count
///                   ‖ (names field texts)* (the waiting updates, oldest first); a record that ends
///                   after the merged texts (as first written) has nothing sent and nothing waiting
///     notification  u8 layout ‖ varint device ‖ varint subscription ‖ u8 platform ‖ string
///                   application ‖ string token ‖ string item ‖ string payload ‖ zigzag created (ms)
package enum PushRecords {
    static func counters(_ m: PushState.Model) -> [UInt8] {
        var w = PushLayout.Writer()
        w.varint(m.nextDevice)
        w.varint(m.nextSubscription)
        w.varint(m.nextNotification)
        return w.bytes
    }

    // MARK: Devices

    static func encode(_ d: PushState.DeviceEntry) -> [UInt8] {
        var w = PushLayout.Writer()
        w.u8(d.device.platform.code)
        w.string(d.device.applicationID)
        w.string(d.device.deviceToken)
        w.u8(d.suspended ? 1 : 0)
        w.varint(d.badge)
        return w.bytes
    }

    static func decodeDevice(_ bytes: [UInt8], number: UInt64) throws -> PushState.DeviceEntry {
        var r = try PushLayout.Reader(bytes, what: "push device \(PushLayout.deviceID(number))")
        let code = try r.u8()
        guard let platform = PushDevice.Platform(code: code) else { throw r.fail("unknown platform \(code)") }
        let app = try r.string()
        let token = try r.string()
        let suspended = try r.u8()
        guard suspended <= 1 else { throw r.fail("bad suspended flag \(suspended)") }
        let badge = try r.varint()
        try r.end()
        return PushState.DeviceEntry(device: PushDevice(platform: platform, applicationID: app, deviceToken: token),
                                     suspended: suspended == 1, badge: badge)
    }

    // MARK: Subscriptions

    static func encode(_ e: PushState.SubscriptionEntry) -> [UInt8] {
        let s = e.subscription
        var w = PushLayout.Writer()
        w.varint(e.device)
        w.u8(s.mode == .merge ? 1 : 2)
        w.u8(s.dataAdapter == .timeSeries ? 1 : 2)
        w.names(s.items)
        w.names(s.fields)
        w.string(s.notificationFormat ?? "")
        if let t = s.triggerExpression {
            w.u8(1)
            w.string(t)
        } else {
            w.u8(0)
        }
        switch s.requestedBufferSize {
        case nil: w.varint(0)
        case .unlimited?: w.varint(1)
        case .limited(let n)?: w.varint(UInt64(max(1, n)) + 2)
        }
        switch s.requestedMaxFrequency {
        case nil: w.u8(0)
        case .unlimited?: w.u8(1)
        case .limited(let f)?:
            w.u8(2)
            w.double(f)
        }
        w.u8(s.status == .triggered ? 3 : 2)
        w.signed(s.statusTimestamp.flatMap(SeriesTime.milliseconds) ?? 0)
        return w.bytes
    }

    /// Compiled formats and triggers (and name lists) already decoded at open, so that a million
    /// subscriptions with a few distinct formats share a few compiled ones.
    struct CompileCache {
        struct Key: Hashable {
            let text: String
            let fields: [String]
        }
        var templates: [Key: NotificationTemplate] = [:]
        var triggers: [Key: PushTrigger] = [:]
        var names: [[String]: [String]] = [:]

        mutating func intern(_ list: [String]) -> [String] {
            if let shared = names[list] { return shared }
            names[list] = list
            return list
        }
    }

    static func decodeSubscription(_ bytes: [UInt8], number: UInt64) throws -> PushState.SubscriptionEntry {
        var cache = CompileCache()
        return try decodeSubscription(bytes, number: number, cache: &cache)
    }

    static func decodeSubscription(_ bytes: [UInt8], number: UInt64, cache: inout CompileCache) throws -> PushState.SubscriptionEntry {
        let id = PushLayout.subscriptionID(number)
        var r = try PushLayout.Reader(bytes, what: "push subscription \(id)")
        let device = try r.varint()
        let mode = try r.u8()
        let adapter = try r.u8()
        guard (1...2).contains(mode), (1...2).contains(adapter) else { throw r.fail("bad mode \(mode) or adapter \(adapter)") }
        var s = PushSubscription(mode: mode == 1 ? .merge : .distinct, items: cache.intern(try r.names()),
                                 fields: cache.intern(try r.names()))
        s.dataAdapter = adapter == 1 ? .timeSeries : .history
        s.notificationFormat = try r.string()
        switch try r.u8() {
        case 0: break
        case 1: s.triggerExpression = try r.string()
        case let flag: throw r.fail("bad trigger flag \(flag)")
        }
        let buffer = try r.varint()
        switch buffer {
        case 0: break
        case 1: s.requestedBufferSize = .unlimited
        default:
            guard buffer - 2 <= UInt64(Int.max) else { throw r.fail("buffer size \(buffer)") }
            s.requestedBufferSize = .limited(Int(buffer - 2))
        }
        switch try r.u8() {
        case 0: break
        case 1: s.requestedMaxFrequency = .unlimited
        case 2: s.requestedMaxFrequency = .limited(try r.double())
        case let kind: throw r.fail("bad frequency kind \(kind)")
        }
        switch try r.u8() {
        case 2: s.status = .subscribed
        case 3: s.status = .triggered
        case let status: throw r.fail("bad status \(status)")
        }
        s.statusTimestamp = SeriesTime.date(try r.signed())
        try r.end()
        s.subscriptionID = id
        do {
            try s.validate()
            let format = CompileCache.Key(text: s.notificationFormat ?? "", fields: s.fields)
            let template = try cache.templates[format] ?? NotificationTemplate(format.text, fields: s.fields)
            cache.templates[format] = template
            s.notificationFormat = template.format
            var trigger: PushTrigger?
            if let expression = s.triggerExpression {
                let key = CompileCache.Key(text: expression, fields: s.fields)
                let compiled = try cache.triggers[key] ?? PushTrigger(expression, fields: s.fields)
                cache.triggers[key] = compiled
                s.triggerExpression = compiled.expression
                trigger = compiled
            }
            return PushState.SubscriptionEntry(number: number, device: device, subscription: s, template: template, trigger: trigger)
        } catch StrataError.invalidArgument(_, let reason) {
            throw r.fail(reason)
        }
    }

    // MARK: Item states

    static func encodeItemState(merged: [String]?, timing: PushState.ItemTiming) -> [UInt8] {
        var w = PushLayout.Writer()
        w.names(merged ?? [])
        if let sent = timing.lastSent {
            w.u8(1)
            w.signed(sent)
        } else {
            w.u8(0)
        }
        w.varint(UInt64(timing.waiting.count))
        for values in timing.waiting { w.names(values) }
        return w.bytes
    }

    /// An item state: the merged texts (nil when none) and the frequency state.
    static func decodeItemState(_ bytes: [UInt8], subscription n: UInt64, item: UInt64,
                                fieldCount: Int) throws -> ([String]?, PushState.ItemTiming) {
        var r = try PushLayout.Reader(bytes, what: "push item state \(PushLayout.subscriptionID(n))/\(item)")
        let merged = try r.names()
        guard merged.isEmpty || merged.count == fieldCount else { throw r.fail("\(merged.count) merged fields for \(fieldCount)") }
        var timing = PushState.ItemTiming()
        if r.offset < bytes.count {
            switch try r.u8() {
            case 0: break
            case 1: timing.lastSent = try r.signed()
            case let flag: throw r.fail("bad sent flag \(flag)")
            }
            for _ in 0..<(try r.count()) {
                let values = try r.names()
                guard values.count == fieldCount else { throw r.fail("a waiting update of \(values.count) fields for \(fieldCount)") }
                timing.waiting.append(values)
            }
        }
        try r.end()
        return (merged.isEmpty ? nil : merged, timing)
    }

    // MARK: Notifications

    static func encode(_ n: PushNotification, device: UInt64, subscription: UInt64) -> [UInt8] {
        var w = PushLayout.Writer()
        w.varint(device)
        w.varint(subscription)
        w.u8(n.platform.code)
        w.string(n.applicationID)
        w.string(n.deviceToken)
        w.string(n.item)
        w.string(n.payload)
        w.signed(SeriesTime.milliseconds(n.created) ?? 0)
        return w.bytes
    }

    package static func decodeNotification(_ bytes: [UInt8], id: UInt64) throws -> PushNotification {
        var r = try PushLayout.Reader(bytes, what: "push notification \(id)")
        let device = try r.varint()
        let subscription = try r.varint()
        let code = try r.u8()
        guard let platform = PushDevice.Platform(code: code) else { throw r.fail("unknown platform \(code)") }
        let app = try r.string()
        let token = try r.string()
        let item = try r.string()
        let payload = try r.string()
        let created = try r.signed()
        try r.end()
        return PushNotification(id: id, deviceID: PushLayout.deviceID(device), platform: platform, applicationID: app,
                                deviceToken: token, subscriptionID: PushLayout.subscriptionID(subscription), item: item,
                                payload: payload, created: SeriesTime.date(created))
    }
}

// MARK: For tools

extension PushRecords {
    /// The counters record `(17, 0)`: the numbers the next device, subscription and notification get.
    package static func decodeCounters(_ bytes: [UInt8]) throws -> (device: UInt64, subscription: UInt64, notification: UInt64) {
        var r = try PushLayout.Reader(bytes, what: "push counters")
        let counters = (device: try r.varint(), subscription: try r.varint(), notification: try r.varint())
        try r.end()
        return counters
    }

    /// A device record `(17, 1, number)`: the device, whether it is suspended, its last badge number.
    package static func decodeDeviceRecord(_ bytes: [UInt8], number: UInt64) throws -> (device: PushDevice, suspended: Bool, badge: UInt64) {
        let e = try decodeDevice(bytes, number: number)
        return (e.device, e.suspended, e.badge)
    }

    /// A subscription record `(17, 2, number)`: its device's number and the subscription (id, status and
    /// status time set), its format and trigger checked as at subscribe.
    package static func decodeSubscriptionRecord(_ bytes: [UInt8], number: UInt64) throws -> (device: UInt64, subscription: PushSubscription) {
        let e = try decodeSubscription(bytes, number: number)
        return (e.device, e.subscription)
    }
}

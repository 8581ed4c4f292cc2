import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

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
    static func counters(_ m: PushModel) -> [UInt8] {
        var w = PushLayout.Writer()
        w.varint(m.nextDevice)
        w.varint(m.nextSubscription)
        w.varint(m.nextNotification)
        return w.bytes
    }

    // MARK: Devices

    static func encode(_ d: PushModel.DeviceEntry) -> [UInt8] {
        var w = PushLayout.Writer()
        w.u8(d.device.platform.code)
        w.string(d.device.applicationID)
        w.string(d.device.deviceToken)
        w.u8(d.suspended ? 1 : 0)
        w.varint(d.badge)
        return w.bytes
    }

    static func decodeDevice(_ bytes: [UInt8], number: UInt64) throws -> PushModel.DeviceEntry {
        try PushLayout.read(bytes, what: "push device \(PushLayout.deviceID(number))") { r in
            let code = try r.uint8("platform")
            guard let platform = PushDevice.Platform(code: code) else { throw r.corrupted("unknown platform \(code)") }
            let app = try r.string("application")
            let token = try r.string("token")
            let suspended = try r.uint8("suspended flag")
            guard suspended <= 1 else { throw r.corrupted("bad suspended flag \(suspended)") }
            let badge = try r.varint("badge")
            try r.expectEnd()
            return PushModel.DeviceEntry(device: PushDevice(platform: platform, applicationID: app, deviceToken: token),
                                         suspended: suspended == 1, badge: badge)
        }
    }

    // MARK: Subscriptions

    static func encode(_ e: PushModel.SubscriptionEntry) -> [UInt8] {
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
        /// The specs decoded so far, by their stored bytes (everything between a subscription
        /// record's device and its status): a record whose spec bytes were seen shares the spec,
        /// decoded and checked once.
        var specs: [SpecBytes: PushSubscriptionSpec] = [:]

        /// A spec's stored bytes as a key, hashed as one run of bytes (not byte by byte) with the
        /// standard library's seeded hash: a file crafted so that many specs collide cannot make
        /// the open quadratic (a CRC would let it).
        struct SpecBytes: Hashable {
            let bytes: ArraySlice<UInt8>

            func hash(into hasher: inout Hasher) {
                bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
            }

            static func == (a: SpecBytes, b: SpecBytes) -> Bool {
                a.bytes.withUnsafeBytes { x in b.bytes.withUnsafeBytes { y in ByteComparison.compare(x, y) == 0 } }
            }
        }

        mutating func intern(_ list: [String]) -> [String] {
            if let shared = names[list] { return shared }
            names[list] = list
            return list
        }
    }

    static func decodeSubscription(_ bytes: [UInt8], number: UInt64) throws -> PushModel.SubscriptionEntry {
        var cache = CompileCache()
        return try decodeSubscription(bytes, number: number, cache: &cache)
    }

    /// A subscription record split without decoding its spec: the device, where the spec's bytes
    /// are, the status and the status time; nil when the record does not split so (the full
    /// decoding then says what is wrong). The status is the last byte before the final varint:
    /// a varint's bytes before its last have the high bit set, and a status byte (2 or 3) has not.
    private static func split(_ bytes: [UInt8], what: String) -> (device: UInt64, spec: Range<Int>, status: PushSubscription.Status, time: Int64)? {
        guard bytes.count >= 4, bytes[0] == PushLayout.layout, bytes[bytes.count - 1] < 0x80 else { return nil }
        var j = bytes.count - 2
        while j > 1, bytes[j] >= 0x80 { j -= 1 }
        let status: PushSubscription.Status
        switch bytes[j] {
        case 2: status = .subscribed
        case 3: status = .triggered
        default: return nil
        }
        guard let (device, specStart) = try? ByteReader.read(bytes, file: what, offset: 1, { r in (try r.varint("device"), r.offset) }),
              specStart < j,
              let time = try? ByteReader.read(bytes, file: what, offset: j + 1, { r in
                  let t = try r.signedVarint("status time")
                  try r.expectEnd()
                  return t
              }) else { return nil }
        return (device, specStart..<j, status, time)
    }

    static func decodeSubscription(_ bytes: [UInt8], number: UInt64, cache: inout CompileCache) throws -> PushModel.SubscriptionEntry {
        // The split's errors are not reported (a record that does not split is decoded in full below).
        let parts = split(bytes, what: "push subscription")
        if let parts, let spec = cache.specs[CompileCache.SpecBytes(bytes: bytes[parts.spec])] {
            return PushModel.SubscriptionEntry(number: number, device: parts.device, spec: spec, status: parts.status, statusTime: parts.time)
        }
        let id = PushLayout.subscriptionID(number)
        let what = "push subscription \(id)"
        return try PushLayout.read(bytes, what: what) { r in
            let device = try r.varint("device")
            let mode = try r.uint8("mode")
            let adapter = try r.uint8("adapter")
            guard (1...2).contains(mode), (1...2).contains(adapter) else { throw r.corrupted("bad mode \(mode) or adapter \(adapter)") }
            var s = PushSubscription(mode: mode == 1 ? .merge : .distinct, items: cache.intern(try PushLayout.names(&r, "item")),
                                     fields: cache.intern(try PushLayout.names(&r, "field")))
            s.dataAdapter = adapter == 1 ? .timeSeries : .history
            s.notificationFormat = try r.string("format")
            switch try r.uint8("trigger flag") {
            case 0: break
            case 1: s.triggerExpression = try r.string("trigger")
            case let flag: throw r.corrupted("bad trigger flag \(flag)")
            }
            let buffer = try r.varint("buffer size")
            switch buffer {
            case 0: break
            case 1: s.requestedBufferSize = .unlimited
            default:
                guard buffer - 2 <= UInt64(Int.max) else { throw r.corrupted("buffer size \(buffer)") }
                s.requestedBufferSize = .limited(Int(buffer - 2))
            }
            switch try r.uint8("frequency kind") {
            case 0: break
            case 1: s.requestedMaxFrequency = .unlimited
            case 2: s.requestedMaxFrequency = .limited(try r.double("frequency"))
            case let kind: throw r.corrupted("bad frequency kind \(kind)")
            }
            let statusAt = r.offset
            let status: PushSubscription.Status
            switch try r.uint8("status") {
            case 2: status = .subscribed
            case 3: status = .triggered
            case let status: throw r.corrupted("bad status \(status)")
            }
            let time = try r.signedVarint("status time")
            try r.expectEnd()
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
                let spec = PushSubscriptionSpec(s, template: template, trigger: trigger)
                if let parts, parts.spec.upperBound == statusAt, parts.device == device {
                    cache.specs[CompileCache.SpecBytes(bytes: bytes[parts.spec])] = spec
                }
                return PushModel.SubscriptionEntry(number: number, device: device, spec: spec, status: status, statusTime: time)
            } catch StrataError.invalidArgument(_, let reason) {
                throw r.corrupted(reason)
            }
        }
    }

    // MARK: Item states

    static func encodeItemState(merged: [String]?, timing: PushModel.ItemTiming) -> [UInt8] {
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
                                fieldCount: Int) throws -> ([String]?, PushModel.ItemTiming) {
        try PushLayout.read(bytes, what: "push item state \(PushLayout.subscriptionID(n))/\(item)") { r in
            let merged = try PushLayout.names(&r, "merged field")
            guard merged.isEmpty || merged.count == fieldCount else { throw r.corrupted("\(merged.count) merged fields for \(fieldCount)") }
            var timing = PushModel.ItemTiming()
            if !r.isAtEnd {
                switch try r.uint8("sent flag") {
                case 0: break
                case 1: timing.lastSent = try r.signedVarint("last-sent time")
                case let flag: throw r.corrupted("bad sent flag \(flag)")
                }
                for _ in 0..<(try r.count("waiting count")) {
                    let values = try PushLayout.names(&r, "waiting field")
                    guard values.count == fieldCount else { throw r.corrupted("a waiting update of \(values.count) fields for \(fieldCount)") }
                    timing.waiting.append(values)
                }
            }
            try r.expectEnd()
            return (merged.isEmpty ? nil : merged, timing)
        }
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
        try PushLayout.read(bytes, what: "push notification \(id)") { r in
            let device = try r.varint("device")
            let subscription = try r.varint("subscription")
            let code = try r.uint8("platform")
            guard let platform = PushDevice.Platform(code: code) else { throw r.corrupted("unknown platform \(code)") }
            let app = try r.string("application")
            let token = try r.string("token")
            let item = try r.string("item")
            let payload = try r.string("payload")
            let created = try r.signedVarint("created")
            try r.expectEnd()
            return PushNotification(id: id, deviceID: PushLayout.deviceID(device), platform: platform, applicationID: app,
                                    deviceToken: token, subscriptionID: PushLayout.subscriptionID(subscription), item: item,
                                    payload: payload, created: SeriesTime.date(created))
        }
    }
}

// MARK: For tools

extension PushRecords {
    /// The counters record `(17, 0)`: the numbers the next device, subscription and notification get.
    package static func decodeCounters(_ bytes: [UInt8]) throws -> (device: UInt64, subscription: UInt64, notification: UInt64) {
        try PushLayout.read(bytes, what: "push counters") { r in
            let counters = (device: try r.varint("next device number"), subscription: try r.varint("next subscription number"),
                            notification: try r.varint("next notification number"))
            try r.expectEnd()
            return counters
        }
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

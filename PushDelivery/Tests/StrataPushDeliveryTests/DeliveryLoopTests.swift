import Foundation
import Strata
import Synchronization
import Testing
@testable import StrataPushDelivery

/// The delivery loop against a real store and scripted senders (no network).
@Suite struct DeliveryLoopTests {
    static let fast = PushDeliveryOptions(retryBaseDelay: .milliseconds(10), retryMaxDelay: .milliseconds(40))

    @Test("everything is delivered and acknowledged, in few commits, each device in order, within maxInFlight")
    func deliversAll() async throws {
        let outbox = try TestOutbox()
        for d in 0..<20 { try outbox.device("tok\(d)") }
        for d in 0..<20 { try outbox.notify("tok\(d)", count: 10) }
        let sender = ScriptedSender(delay: .milliseconds(1))
        var options = Self.fast
        options.maxInFlight = 8
        let delivery = PushDelivery.scripted(outbox, apple: sender, options: options)
        let task = Task { try await delivery.run() }
        try await Self.waitUntil { try outbox.pending().isEmpty }
        for d in 0..<20 { try outbox.notify("tok\(d)", count: 5, from: 10) }   // new ones, while it runs
        try await Self.waitUntil { try delivery.statistics.delivered == 300 && outbox.pending().isEmpty }
        task.cancel()
        try await task.value
        let s = delivery.statistics
        #expect(s.delivered == 300 && s.retried == 0 && s.rejected.isEmpty && s.inFlight == 0)
        #expect(s.acknowledgementCommits >= 1 && s.acknowledgementCommits < 300)
        #expect(sender.record.withLock { $0.maxConcurrent } <= 8)
        let sent = sender.sent
        #expect(sent.count == 300 && Set(sent.map(\.id)).count == 300)
        for d in 0..<20 {
            let ids = sent.filter { $0.deviceToken == "tok\(d)" }.map(\.id)
            #expect(ids == ids.sorted())
        }
    }

    @Test("a retried device waits (backoff) while the others go on; retried is counted; the notification is resent")
    func retryPerDevice() async throws {
        let outbox = try TestOutbox()
        try outbox.device("slow")
        try outbox.device("fine")
        try outbox.notify("slow", count: 2)
        try outbox.notify("fine", count: 3)
        let sender = ScriptedSender { n, attempt in
            n.deviceToken == "slow" && n.payload.contains("n=0") && attempt <= 2 ? .retry(reason: "ServiceUnavailable", after: nil) : .delivered
        }
        let delivery = PushDelivery.scripted(outbox, apple: sender, options: Self.fast)
        let error = try await delivery.run { $0.delivered == 5 }
        #expect(error == nil)
        #expect(try outbox.pending().isEmpty)
        let s = delivery.statistics
        #expect(s.retried == 2 && s.delivered == 5)
        let order = sender.sent.map(\.deviceToken)
        #expect(order.filter { $0 == "slow" }.count == 4, "the first one three times, then the second")
        let slowIDs = sender.sent.filter { $0.deviceToken == "slow" }.map(\.id)
        #expect(slowIDs == [slowIDs[0], slowIDs[0], slowIDs[0], slowIDs[0] + 1], "order kept: the next waits for the retried one")
        let lastFine = try #require(order.lastIndex(of: "fine"))
        let lastSlow = try #require(order.lastIndex(of: "slow"))
        #expect(lastFine < lastSlow, "the fine device did not wait for the slow one")
    }

    @Test("Retry-After holds the device back at least that long")
    func retryAfter() async throws {
        let outbox = try TestOutbox()
        try outbox.device("a")
        try outbox.notify("a")
        let times = Mutex<[ContinuousClock.Instant]>([])
        let sender = ScriptedSender { _, attempt in
            times.withLock { $0.append(.now) }
            return attempt == 1 ? .retry(reason: "TooManyRequests", after: .milliseconds(200)) : .delivered
        }
        var options = Self.fast
        options.retryMaxDelay = .seconds(1)
        let delivery = PushDelivery.scripted(outbox, apple: sender, options: options)
        _ = try await delivery.run { $0.delivered == 1 }
        let t = times.withLock { $0 }
        #expect(t.count == 2 && t[1] - t[0] >= .milliseconds(200))
    }

    @Test("a refused token suspends the device, acknowledges its queued notifications unsent, counts once")
    func suspension() async throws {
        let outbox = try TestOutbox()
        let gone = try outbox.device("gone")
        try outbox.device("ok")
        try outbox.notify("gone", count: 4)
        try outbox.notify("ok", count: 2)
        let sender = ScriptedSender { n, _ in n.deviceToken == "gone" ? .suspendDevice(reason: "Unregistered") : .delivered }
        let delivery = PushDelivery.scripted(outbox, apple: sender, options: Self.fast)
        _ = try await delivery.run { s in s.delivered == 2 && s.rejected["Unregistered"] == 4 && s.acknowledgementCommits > 0 }
        try await Self.waitUntil { try outbox.pending().isEmpty }
        let s = delivery.statistics
        #expect(s.devicesSuspended == 1 && s.rejected == ["Unregistered": 4] && s.delivered == 2)
        #expect(sender.sent.filter { $0.deviceToken == "gone" }.count == 1, "its other notifications were not sent")
        try outbox.notify("gone", count: 1, from: 10)
        #expect(try outbox.pending().isEmpty, "a suspended device gets no new notifications")
        #expect(try await outbox.push.register(PushDevice(platform: .apple, applicationID: "com.example.app", deviceToken: "gone")).id == gone)
        try outbox.notify("gone", count: 1, from: 20)
        #expect(try outbox.pending().count == 1, "register resumed it")
    }

    @Test("a rejected payload is acknowledged unsent and counted by reason")
    func rejected() async throws {
        let outbox = try TestOutbox()
        try outbox.device("a")
        try outbox.notify("a", count: 3)
        let sender = ScriptedSender { n, _ in n.payload.contains("n=1") ? .rejected(reason: "PayloadTooLarge") : .delivered }
        let delivery = PushDelivery.scripted(outbox, apple: sender, options: Self.fast)
        _ = try await delivery.run { $0.delivered == 2 && $0.rejected["PayloadTooLarge"] == 1 }
        try await Self.waitUntil { try outbox.pending().isEmpty }
        #expect(delivery.statistics.devicesSuspended == 0)
    }

    @Test("a configuration error ends run() with StrataError.network; that notification stays, the answered ones are acknowledged")
    func configurationError() async throws {
        let outbox = try TestOutbox()
        try outbox.device("a")
        try outbox.notify("a", count: 3)
        let sender = ScriptedSender { n, _ in
            n.payload.contains("n=2") ? .configurationError("APNs refused the provider token or credentials: 403 InvalidProviderToken") : .delivered
        }
        let delivery = PushDelivery.scripted(outbox, apple: sender, options: Self.fast)
        await #expect(throws: StrataError.network("APNs refused the provider token or credentials: 403 InvalidProviderToken")) {
            try await delivery.run()
        }
        #expect(try outbox.pending().map(\.payload) == [#"{"aps":{"alert":"n=2"}}"#])
        #expect(delivery.statistics.delivered == 2)
    }

    @Test("notifications of a platform without configuration stay in the outbox, counted, and hold nobody back")
    func unconfigured() async throws {
        let outbox = try TestOutbox()
        try outbox.device("android", platform: .google, format: #"{"data":{"n":"${n}"}}"#)
        try outbox.device("iphone")
        try outbox.notify("android", count: 2)
        try outbox.notify("iphone", count: 2)
        let delivery = PushDelivery.scripted(outbox, apple: ScriptedSender(), options: Self.fast)
        _ = try await delivery.run { $0.delivered == 2 && $0.unconfigured == 2 }
        try await Self.waitUntil { try outbox.pending().count == 2 }
        #expect(try outbox.pending().allSatisfy { $0.platform == .google })
        #expect(delivery.statistics.unconfigured == 2)
    }

    @Test("a stream that overflows is reopened; what it yields again is not sent twice")
    func overflow() async throws {
        let outbox = try TestOutbox()
        for d in 0..<10 { try outbox.device("tok\(d)", item: "shared") }   // one update: ten notifications in one commit
        let sender = ScriptedSender(delay: .milliseconds(2))
        var options = Self.fast
        options.streamBufferSize = 1
        let delivery = PushDelivery.scripted(outbox, apple: sender, options: options)
        let task = Task { try await delivery.run() }
        try await Task.sleep(for: .milliseconds(20))
        try outbox.notify("shared", count: 5)
        try await Self.waitUntil { try delivery.statistics.delivered == 50 && outbox.pending().isEmpty }
        try await Task.sleep(for: .milliseconds(50))
        task.cancel()
        try await task.value
        let ids = sender.sent.map(\.id)
        #expect(ids.count == 50 && Set(ids).count == 50)
    }

    @Test("a full acknowledgement batch commits at once; a partial one waits for the interval, and commits when the run ends")
    func batching() async throws {
        let outbox = try TestOutbox()
        for d in 0..<10 { try outbox.device("tok\(d)") }
        for d in 0..<10 { try outbox.notify("tok\(d)", count: 2) }
        var options = Self.fast
        options.acknowledgementBatchSize = 5
        // An interval no test outlives: a batch committed before the run ends did not wait for it.
        options.acknowledgementInterval = .seconds(3_600)
        let delivery = PushDelivery.scripted(outbox, apple: ScriptedSender(), options: options)
        let task = Task { try await delivery.run() }
        try await Self.waitUntil { try outbox.pending().isEmpty }
        try await Self.waitUntil { delivery.statistics.acknowledgementCommits == 4 }   // counted just after the commit
        try outbox.notify("tok0", count: 2, from: 10)
        try await Self.waitUntil { delivery.statistics.delivered == 22 }
        try await Task.sleep(for: .milliseconds(100))
        #expect(try outbox.pending().count == 2, "a partial batch waits")
        #expect(delivery.statistics.acknowledgementCommits == 4)
        task.cancel()
        try await task.value
        #expect(try outbox.pending().isEmpty, "the end of the run commits what waits")
        #expect(delivery.statistics.acknowledgementCommits == 5)
    }

    @Test("a partial acknowledgement batch commits once the interval has passed")
    func partialBatchAfterTheInterval() async throws {
        let outbox = try TestOutbox()
        for d in 0..<2 { try outbox.device("tok\(d)") }
        for d in 0..<2 { try outbox.notify("tok\(d)", count: 1) }
        var options = Self.fast
        options.acknowledgementBatchSize = 5
        options.acknowledgementInterval = .milliseconds(50)
        let delivery = PushDelivery.scripted(outbox, apple: ScriptedSender(), options: options)
        let task = Task { try await delivery.run() }
        try await Self.waitUntil { try outbox.pending().isEmpty }
        try await Self.waitUntil { delivery.statistics.acknowledgementCommits >= 1 }   // counted just after the commit
        task.cancel()
        try await task.value
    }

    @Test("cancelling run() commits the acknowledgements it holds")
    func cancelFlushes() async throws {
        let outbox = try TestOutbox()
        try outbox.device("a")
        try outbox.notify("a", count: 3)
        var options = Self.fast
        options.acknowledgementInterval = .seconds(60)
        let delivery = PushDelivery.scripted(outbox, apple: ScriptedSender(), options: options)
        let task = Task { try await delivery.run() }
        try await Self.waitUntil { delivery.statistics.delivered == 3 }
        #expect(try outbox.pending().count == 3, "waiting for the interval")
        task.cancel()
        try await task.value
        #expect(try outbox.pending().isEmpty)
        #expect(delivery.statistics.acknowledgementCommits == 1)
    }

    @Test("run() returns when the store closes")
    func storeCloses() async throws {
        let outbox = try TestOutbox()
        let delivery = PushDelivery.scripted(outbox, apple: ScriptedSender(), options: Self.fast)
        let task = Task { try await delivery.run() }
        try await Task.sleep(for: .milliseconds(50))
        try await outbox.store.close()
        try await task.value
    }

    @Test("options out of range make run() throw invalidArgument; a second concurrent run is refused")
    func invalid() async throws {
        let outbox = try TestOutbox()
        let bad = PushDelivery.scripted(outbox, apple: ScriptedSender(), options: PushDeliveryOptions(maxInFlight: 0))
        await #expect(throws: StrataError.self) { try await bad.run() }
        let delivery = PushDelivery.scripted(outbox, apple: ScriptedSender(), options: Self.fast)
        let task = Task { try await delivery.run() }
        try await Task.sleep(for: .milliseconds(50))
        await #expect(throws: StrataError.self) { try await delivery.run() }
        task.cancel()
        try await task.value
    }

    static func waitUntil(timeout: Duration = .seconds(20), _ condition: () throws -> Bool) async throws {
        let start = ContinuousClock.now
        while try !condition() {
            if ContinuousClock.now - start > timeout { Issue.record("timed out"); return }
            try await Task.sleep(for: .milliseconds(5))
        }
    }
}

import Foundation
import Testing
@testable import Strata
@testable import StrataInspection
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// One rule for a malformed key of push records (issue 22): every reader of device, subscription
// and outbox keys throws the same typed corruption naming the records and the key; none skips it.

@Suite("PushLayout keys")
struct PushLayoutTests {
    /// `body`'s error, expected to be a corruption of `file` naming `key`.
    static func expectCorruption(_ file: String, naming key: [UInt8], _ what: String, _ body: () throws -> Void,
                                 sourceLocation: SourceLocation = #_sourceLocation) {
        let e = Hardening.typed(what, body)
        guard case .corrupted(let f, _, let reason)? = e else {
            Issue.record("\(what): expected .corrupted, got \(String(describing: e))", sourceLocation: sourceLocation)
            return
        }
        #expect(f == file, "\(what)", sourceLocation: sourceLocation)
        #expect(reason.contains(TupleKey.describe(key)), "\(what): \(reason)", sourceLocation: sourceLocation)
    }

    static func key(_ build: (inout TupleKeyEncoder) -> Void) -> [UInt8] {
        var e = TupleKeyEncoder()
        e.append(Keyspace.push.id)
        build(&e)
        return e.bytes
    }

    @Test("a key's number is read one way; any other shape under the prefix is a corruption naming the records")
    func numbers() throws {
        #expect(try PushLayout.number(ofKey: PushLayout.notificationKey(7), kind: 4) == 7)
        #expect(try PushLayout.number(ofKey: PushLayout.deviceKey(.max), kind: 1) == .max)
        let extra = Self.key { $0.append(4); $0.append(5); $0.append(1) }
        let text = Self.key { $0.append(4); $0.append("x") }
        let empty = PushLayout.prefix(4)
        for bad in [extra, text, empty] {
            Self.expectCorruption("push outbox", naming: bad, "outbox key") { _ = try PushLayout.number(ofKey: bad, kind: 4) }
        }
        Self.expectCorruption("push devices", naming: text, "another kind's prefix") { _ = try PushLayout.number(ofKey: text, kind: 1) }
        let device = Self.key { $0.append(1); $0.append("x") }
        Self.expectCorruption("push devices", naming: device, "device key") { _ = try PushLayout.number(ofKey: device, kind: 1) }
    }

    @Test("a malformed outbox key sorting last: opening a store with subscriptions refuses it, changing nothing")
    func malformedLastKeyRefusesOpen() throws {
        let dir = try Hardening.pushStore()
        defer { dir.remove() }
        let bad = Self.key { $0.append(4); $0.append(5); $0.append(1) }
        try Hardening.writeRaw(dir, [(bad, [])])
        let e = try Hardening.expectRefusedOpen(dir)
        guard case .corrupted("push outbox", _, let reason)? = e else {
            Issue.record("expected a corruption of the push outbox, got \(String(describing: e))")
            return
        }
        #expect(reason.contains(TupleKey.describe(bad)))
    }

    /// A push store whose outbox holds one notification and, before it, a malformed key: open,
    /// with the corruption checked on the outbox read.
    static func openWithMalformedKey() throws -> (TemporaryDirectory, Store, PushNotifications, [UInt8]) {
        let dir = try Hardening.pushStore()
        do {
            let store = try Store.open(at: dir.url)
            defer { try? store.close() }
            try store.timeSeries("AAPL", of: Double.self).append(1)
            #expect(try store.pushNotifications().pendingNotifications().count == 1)
        }
        let bad = Self.key { $0.append(4); $0.append("x") }  // sorts before every numbered notification
        try Hardening.writeRaw(dir, [(bad, [])])
        let store = try Store.open(at: dir.url)
        let push = try store.pushNotifications()
        Self.expectCorruption("push outbox", naming: bad, "pendingNotifications") { _ = try push.pendingNotifications() }
        return (dir, store, push, bad)
    }

    /// Closes `store`, then inspects its directory expecting the corruption.
    static func closeAndInspect(_ dir: TemporaryDirectory, _ store: Store, _ bad: [UInt8]) throws {
        try store.close()
        Self.expectCorruption("push outbox", naming: bad, "inspector") { _ = try PushInspector.push(ofStoreAt: dir.path) }
        dir.remove()
    }

    @Test("a malformed outbox key among valid ones: the outbox reads, its stream and the inspector throw the same corruption")
    func malformedKeyThrowsOnEveryRead() async throws {
        let (dir, store, push, bad) = try Self.openWithMalformedKey()
        var iterator = push.notifications().makeAsyncIterator()
        var streamError: (any Error)?
        do { _ = try await iterator.next() } catch { streamError = error }
        Self.expectCorruption("push outbox", naming: bad, "notifications stream") { if let streamError { throw streamError } }
        try Self.closeAndInspect(dir, store, bad)
    }
}

import Foundation
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// A randomized test of sessions against a reference model written from API.md ("Sessions and
// permissions") alone: the model resolves permissions by brute force (never through
// ResolvedPolicy or SessionAccess) and predicts, for every call of a random principal on a random
// path, whether it is allowed or denied naming which permission, and what the store then holds.
// The table of every entry point is SessionPermissionTableTests.swift.

@Suite struct SessionModelTests {
    @Test("random policies and calls through sessions agree with the reference model", arguments: [1, 2, 3, 4, 5, 6, 7, 8] as [UInt64])
    func randomized(seed: UInt64) throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let run = try SessionModelRun(seed: seed, directory: dir)
        defer { run.close() }
        try run.run(steps: 400)
        // The test exercised what it claims: both outcomes, and sessions and handles older than
        // the policy they were checked under.
        #expect(run.tally.allowed >= 30 && run.tally.denied >= 30, "seed \(seed): \(run.tally)")
        #expect(run.tally.staleSessionCalls > 0 && run.tally.staleHandleCalls > 0, "seed \(seed): \(run.tally)")
        #expect(run.tally.reopens > 0 && run.tally.policiesSetBySession > 0, "seed \(seed): \(run.tally)")
    }
}

/// What the store should hold and how a policy resolves, from API.md only.
private struct SessionReference {
    struct Event: Equatable, CustomStringConvertible {
        var sequence: UInt64
        var value: Double
        var author: String
        var original: UInt64?

        var description: String { "\(sequence):\(value) by \(author)\(original.map { " edits \($0)" } ?? "")" }
    }

    struct Message: Equatable, CustomStringConvertible {
        var timetoken: Timetoken
        var message: JSON
        var publisher: String?

        var description: String { "\(timetoken.rawValue):\(message) by \(publisher ?? "-")" }
    }

    var policy = SecurityPolicy()
    var version: UInt64 = 0
    var series: [String: [Event]] = [:]
    var channels: [String: [Message]] = [:]
    var databases: [String: [String: [String: JSON]]] = [:]

    /// The principal's roles: those the policy assigns it, or the default roles if the policy does
    /// not name it; then every role these include, transitively. Names without a role are kept
    /// (they grant nothing).
    func roles(of principal: String) -> Set<String> {
        var result = Set<String>()
        var pending = Array(policy.principals[principal] ?? policy.defaultRoles)
        while let name = pending.popLast() {
            guard result.insert(name).inserted else { continue }
            pending += policy.roles[name]?.includedRoles ?? []
        }
        return result
    }

    /// The union over the principal's roles of the permissions each role assigns to the longest
    /// of its paths that is the path itself or a prefix of it by whole segments ("" is the root).
    func permissions(_ principal: String, _ path: String) -> Set<Permission> {
        var result = Set<Permission>()
        for name in roles(of: principal) {
            guard let role = policy.roles[name] else { continue }
            let covering = role.paths.keys.filter { $0.isEmpty || $0 == path || path.hasPrefix($0 + "/") }
            if let longest = covering.max(by: { $0.count < $1.count }) { result.formUnion(role.paths[longest] ?? []) }
        }
        return result
    }

    func global(_ principal: String) -> Set<Permission> {
        var result = Set<Permission>()
        for name in roles(of: principal) { result.formUnion(policy.roles[name]?.global ?? []) }
        return result
    }

    /// The merged view: each original, replaced by its latest edit.
    func values(_ path: String) -> [Event] {
        let events = series[path] ?? []
        return events.filter { $0.original == nil }.map { o in
            events.last(where: { $0.original == o.sequence }) ?? o
        }
    }

    /// The originals with only the latest edit of each, in sequence order.
    func latestEdits(_ path: String) -> [Event] {
        let events = series[path] ?? []
        return events.filter { e in
            guard let o = e.original else { return true }
            return events.last(where: { $0.original == o })?.sequence == e.sequence
        }
    }

    /// The newest `limit` messages of a channel, oldest first.
    func newest(_ name: String, _ limit: Int) -> [Message] {
        Array((channels[name] ?? []).suffix(limit))
    }
}

/// What a call did: allowed, or which error.
private enum Outcome: Equatable, CustomStringConvertible {
    case allowed
    case denied(principal: String, permission: Permission, path: String?)
    case notFound
    case invalidArgument

    var description: String {
        switch self {
        case .allowed: "allowed"
        case .denied(let principal, let permission, let path): "denied \(principal) \(permission) on \(path.map { "\"\($0)\"" } ?? "nil")"
        case .notFound: "notFound"
        case .invalidArgument: "invalidArgument"
        }
    }
}

private struct Mismatch: Error, CustomStringConvertible {
    let description: String
}

/// One seeded run: a store, sessions and handles kept across steps (and across policy changes),
/// and the reference.
private final class SessionModelRun {
    static let principals = ["alice", "bob", "carol", "dave"]
    static let roleNames = ["r0", "r1", "r2", "r3"]
    /// Paths roles assign permissions to.
    static let policyPaths = ["", "a", "a/b", "a/b/c", "ab", "x"]
    /// Paths of series, channels and databases ("a/bc" and "ab/c" test whole-segment matching).
    static let paths = ["a", "a/b", "a/b/c", "a/bc", "ab", "ab/c", "x/y", "z"]
    static let pathPermissions: [Permission] = [
        .readTopic, .selectTopic, .updateTopic, .modifyTopic, .editTimeSeriesEvents, .editOwnTimeSeriesEvents,
        .queryObsoleteTimeSeriesEvents,
    ]
    static let documentIDs = ["d0", "d1", "d2", "d3"]

    struct Tally: CustomStringConvertible {
        var allowed = 0, denied = 0, otherErrors = 0
        var staleSessionCalls = 0, staleHandleCalls = 0, reopens = 0, policiesSetBySession = 0
        var description: String {
            "allowed \(allowed), denied \(denied), other errors \(otherErrors), calls through stale sessions \(staleSessionCalls) "
                + "and handles \(staleHandleCalls), reopens \(reopens), policies set by a session \(policiesSetBySession)"
        }
    }

    /// A handle and the policy version it was obtained under.
    struct Held<H> {
        var handle: H
        var version: UInt64
    }

    let seed: UInt64
    let directory: TemporaryDirectory
    var rng: SplitMix64
    var store: Store
    var model = SessionReference()
    var tally = Tally()
    var sessions: [String: Held<StoreSession>] = [:]
    var seriesHandles: [String: Held<TimeSeries<Double>>] = [:]
    var channelHandles: [String: Held<Channel<JSON>>] = [:]
    var databaseHandles: [String: Held<DocumentDatabase>] = [:]
    /// The step being run, for messages.
    var context = ""

    init(seed: UInt64, directory: TemporaryDirectory) throws {
        self.seed = seed
        self.directory = directory
        rng = SplitMix64(seed: seed)
        store = try Store.open(at: directory.url, options: StoreOptions(durability: .buffered))
    }

    func close() { try? store.close() }

    func pick<T>(_ xs: [T]) -> T { xs[rng.below(xs.count)] }

    func fail(_ message: String) -> Mismatch { Mismatch(description: "seed \(seed), \(context): \(message)") }

    // MARK: Calls

    /// Runs `body` and checks that it did what `expected` says; returns its result when allowed.
    func call<R>(_ expected: Outcome, _ body: () throws -> R) throws -> R? {
        let actual: Outcome
        var result: R?
        do {
            result = try body()
            actual = .allowed
        } catch let error as StrataError {
            switch error {
            case .permissionDenied(let principal, let permission, let path): actual = .denied(principal: principal, permission: permission, path: path)
            case .notFound: actual = .notFound
            case .invalidArgument: actual = .invalidArgument
            default: throw fail("threw \(error)")
            }
        }
        guard actual == expected else { throw fail("\(actual), the model expected \(expected)") }
        switch actual {
        case .allowed: tally.allowed += 1
        case .denied: tally.denied += 1
        default: tally.otherErrors += 1
        }
        return result
    }

    /// Allowed if `principal` has every permission of `needed` on `path` (checked in order), else
    /// denied naming the first it lacks.
    func expect(_ principal: String, _ path: String, _ needed: Permission...) -> Outcome {
        let granted = model.permissions(principal, path)
        for p in needed where !granted.contains(p) { return .denied(principal: principal, permission: p, path: path) }
        return .allowed
    }

    func session(_ principal: String) throws -> StoreSession {
        if let held = sessions[principal], !rng.chance(100) {
            if held.version < model.version { tally.staleSessionCalls += 1 }
            return held.handle
        }
        let s = try store.session(principal: principal)
        sessions[principal] = Held(handle: s, version: model.version)
        return s
    }

    /// A handle of an existing collection through `principal`'s session, kept for later steps
    /// (opening an existing collection needs no permission).
    func handle<H>(_ cache: inout [String: Held<H>], _ principal: String, _ path: String,
                   open: (StoreSession) throws -> H) throws -> H {
        let key = principal + "\u{0}" + path
        if let held = cache[key], !rng.chance(200) {
            if held.version < model.version { tally.staleHandleCalls += 1 }
            return held.handle
        }
        let s = try session(principal)
        guard let h = try call(.allowed, { try open(s) }) else { throw fail("no handle") }
        cache[key] = Held(handle: h, version: model.version)
        return h
    }

    func series(_ principal: String, _ path: String) throws -> TimeSeries<Double> {
        try handle(&seriesHandles, principal, path) { try $0.timeSeries(path, of: Double.self) }
    }

    func channel(_ principal: String, _ path: String) throws -> Channel<JSON> {
        try handle(&channelHandles, principal, path) { try $0.channel(path, of: JSON.self) }
    }

    func database(_ principal: String, _ path: String) throws -> DocumentDatabase {
        try handle(&databaseHandles, principal, path) { try $0.documents(path) }
    }

    // MARK: Steps

    func run(steps: Int) throws {
        for path in ["a/b", "ab", "x/y"] { try ownerCreate(kind: 0, path) }
        try ownerCreate(kind: 1, "a/b")
        try ownerCreate(kind: 2, "a")
        try setPolicyAsOwner()
        for step in 0..<steps {
            let r = rng.below(100)
            switch r {
            case 0..<4: context = "step \(step): owner sets a policy"; try setPolicyAsOwner()
            case 4..<7: try setPolicyThroughSession(step)
            case 7..<10: try readPolicyThroughSession(step)
            case 10..<16: try ownerWrite(step)
            case 16..<23: try sessionOpen(step)
            case 23..<55: try seriesStep(step)
            case 55..<77: try channelStep(step)
            case 77..<91: try documentStep(step)
            case 91..<96: try transactionStep(step)
            case 96..<98: context = "step \(step): reopen"; try reopen()
            default: context = "step \(step): verify"; try verifyAll()
            }
            if step % 10 == 9 { context = "step \(step): verify"; try verifyAll() }
            if step == steps / 2 { try handOver(step) }
        }
        context = "end: reopen"
        try reopen()
    }

    func randomPolicy() -> SecurityPolicy {
        var policy = SecurityPolicy()
        for name in Self.roleNames where rng.chance(850) {
            var role = Role()
            if rng.chance(300) { role.global.insert(.viewSecurity) }
            if rng.chance(250) { role.global.insert(.modifySecurity) }
            for path in Self.policyPaths where rng.chance(350) {
                role.paths[path] = Set(Self.pathPermissions.filter { _ in rng.chance(500) })
            }
            // Inclusions, cycles and self-inclusion allowed, and a role that does not exist.
            for other in Self.roleNames + ["ghost"] where rng.chance(200) { role.includedRoles.insert(other) }
            policy.roles[name] = role
        }
        for principal in Self.principals where rng.chance(650) {
            // Possibly no role at all: a named principal does not get the default roles.
            policy.principals[principal] = Set((Self.roleNames + ["ghost"]).filter { _ in rng.chance(400) })
        }
        policy.defaultRoles = Set(Self.roleNames.filter { _ in rng.chance(350) })
        return policy
    }

    func checkStored(_ stored: SecurityPolicy) throws {
        guard stored.roles == model.policy.roles, stored.principals == model.policy.principals,
              stored.defaultRoles == model.policy.defaultRoles, stored.version == model.version else {
            throw fail("policy version \(stored.version) \(stored), the model has version \(model.version) \(model.policy)")
        }
    }

    func setPolicyAsOwner() throws {
        let policy = randomPolicy()
        let stored = try store.setSecurityPolicy(policy)
        model.policy = policy
        model.version += 1
        try checkStored(stored)
        try checkStored(try store.securityPolicy())
    }

    func setPolicyThroughSession(_ step: Int) throws {
        let principal = pick(Self.principals)
        context = "step \(step): \(principal) sets a policy"
        let policy = randomPolicy()
        let expected: Outcome = model.global(principal).contains(.modifySecurity)
            ? .allowed : .denied(principal: principal, permission: .modifySecurity, path: nil)
        let s = try session(principal)
        if let stored = try call(expected, { try s.setSecurityPolicy(policy) }) {
            model.policy = policy
            model.version += 1
            tally.policiesSetBySession += 1
            try checkStored(stored)
        }
        try checkStored(try store.securityPolicy())
    }

    /// The owner makes a principal an administrator, whose session (perhaps opened under an
    /// older policy) then sets a policy.
    func handOver(_ step: Int) throws {
        let principal = pick(Self.principals)
        context = "step \(step): owner makes \(principal) an administrator"
        var policy = randomPolicy()
        policy.roles["admin"] = Role(global: [.modifySecurity])
        policy.principals[principal, default: []].insert("admin")
        try store.setSecurityPolicy(policy)
        model.policy = policy
        model.version += 1
        let s = try session(principal)
        let next = randomPolicy()
        context = "step \(step): administrator \(principal) sets a policy"
        guard let stored = try call(.allowed, { try s.setSecurityPolicy(next) }) else { return }
        model.policy = next
        model.version += 1
        tally.policiesSetBySession += 1
        try checkStored(stored)
    }

    func readPolicyThroughSession(_ step: Int) throws {
        let principal = pick(Self.principals)
        context = "step \(step): \(principal) reads the policy"
        let expected: Outcome = model.global(principal).contains(.viewSecurity)
            ? .allowed : .denied(principal: principal, permission: .viewSecurity, path: nil)
        let s = try session(principal)
        if let stored = try call(expected, { try s.securityPolicy() }) { try checkStored(stored) }
    }

    /// Kinds: 0 series, 1 channel, 2 database.
    func exists(kind: Int, _ path: String) -> Bool {
        switch kind {
        case 0: model.series[path] != nil
        case 1: model.channels[path] != nil
        default: model.databases[path] != nil
        }
    }

    func ownerCreate(kind: Int, _ path: String) throws {
        switch kind {
        case 0: _ = try store.timeSeries(path, of: Double.self); if model.series[path] == nil { model.series[path] = [] }
        case 1: _ = try store.channel(path, of: JSON.self); if model.channels[path] == nil { model.channels[path] = [] }
        default: _ = try store.documents(path); if model.databases[path] == nil { model.databases[path] = [:] }
        }
    }

    /// The owner (never checked) writes as any author, so that sessions meet others' events.
    func ownerWrite(_ step: Int) throws {
        let kind = rng.below(3), path = pick(Self.paths), who = pick(Self.principals)
        context = "step \(step): owner writes kind \(kind) \(path) as \(who)"
        try ownerCreate(kind: kind, path)
        switch kind {
        case 0:
            let value = Double(rng.below(1000))
            let m = try store.timeSeries(path, of: Double.self).append(value, timestamp: nil, author: who)
            model.series[path, default: []].append(.init(sequence: m.sequence, value: value, author: who, original: nil))
        case 1:
            let message: JSON = ["n": .int(Int64(rng.below(1000)))]
            let tt = try store.channel(path, of: JSON.self).publish(message, publisher: who)
            model.channels[path, default: []].append(.init(timetoken: tt, message: message, publisher: who))
        default:
            let id = pick(Self.documentIDs), fields: [String: JSON] = ["n": .int(Int64(rng.below(1000))), "by": .string(who)]
            try store.documents(path).save(Document(id: id, fields: fields))
            model.databases[path, default: [:]][id] = fields
        }
    }

    /// Opens a random collection through a session: an existing one needs nothing, a missing
    /// one is created with `.modifyTopic` and otherwise not at all.
    func sessionOpen(_ step: Int) throws {
        let kind = rng.below(3), path = pick(Self.paths), principal = pick(Self.principals)
        context = "step \(step): \(principal) opens kind \(kind) \(path)"
        let expected = exists(kind: kind, path) ? .allowed : expect(principal, path, .modifyTopic)
        let s = try session(principal)
        switch kind {
        case 0:
            if try call(expected, { try s.timeSeries(path, of: Double.self) }) != nil, model.series[path] == nil { model.series[path] = [] }
        case 1:
            if try call(expected, { try s.channel(path, of: JSON.self) }) != nil, model.channels[path] == nil { model.channels[path] = [] }
        default:
            if try call(expected, { try s.documents(path) }) != nil, model.databases[path] == nil { model.databases[path] = [:] }
        }
        try verifyCatalog()
    }

    func seriesStep(_ step: Int) throws {
        guard let path = model.series.keys.sorted().randomElement(using: &rng) else { return try ownerCreate(kind: 0, "a") }
        let principal = pick(Self.principals)
        let ts = try series(principal, path)
        let next = UInt64(model.series[path]?.count ?? 0)
        switch rng.below(11) {
        case 0, 1:
            let value = Double(rng.below(1000))
            context = "step \(step): \(principal) appends to \(path)"
            if let m = try call(expect(principal, path, .updateTopic), { try ts.append(value) }) {
                try checkAppended([m], [value], principal, path, next)
            }
        case 2:
            // An explicit author: the principal's own, or another's (denied naming .updateTopic).
            let author = rng.chance(500) ? principal : pick(Self.principals + [""])
            let value = Double(rng.below(1000))
            context = "step \(step): \(principal) appends to \(path) as \(author.debugDescription)"
            let expected = author == principal ? expect(principal, path, .updateTopic)
                : .denied(principal: principal, permission: .updateTopic, path: path)
            if let m = try call(expected, { try ts.append(value, timestamp: nil, author: author) }) {
                try checkAppended([m], [value], principal, path, next)
            }
        case 3:
            let values = (0..<(1 + rng.below(3))).map { _ in Double(rng.below(1000)) }
            context = "step \(step): \(principal) appends \(values.count) events to \(path)"
            if let ms = try call(expect(principal, path, .updateTopic), { try ts.append(contentsOf: values) }) {
                try checkAppended(ms, values, principal, path, next)
            }
        case 4, 5, 10:
            try edit(ts, principal, path, step)
        case 6:
            context = "step \(step): \(principal) queries the values of \(path)"
            if let r = try call(expect(principal, path, .readTopic), { try ts.query(.values) }) {
                try check(r.events, model.values(path), "values")
            }
        case 7:
            let all = rng.chance(500)
            context = "step \(step): \(principal) queries edits(\(all ? ".all" : ".latest")) of \(path)"
            let expected = expect(principal, path, .readTopic, .queryObsoleteTimeSeriesEvents)
            if let r = try call(expected, { try ts.query(.edits(all ? .all : .latest)) }) {
                try check(r.events, all ? model.series[path] ?? [] : model.latestEdits(path), "edits")
            }
        case 8:
            context = "step \(step): \(principal) reads the latest event of \(path)"
            if let latest = try call(expect(principal, path, .readTopic), { try ts.latest() }) {
                try check(latest.map { [$0] } ?? [], (model.series[path] ?? []).suffix(1).map { $0 }, "latest")
            }
        case 9:
            context = "step \(step): \(principal) reads the bounds of \(path)"
            if let b = try call(expect(principal, path, .readTopic), { try ts.bounds() }) {
                guard b.count == next, b.next == next else { throw fail("bounds \(b), the model has \(next) events") }
            }
        default:
            try edit(ts, principal, path, step)
        }
    }

    /// An edit of a random event (the principal's own, another's, an edit event or one that
    /// does not exist), perhaps with an explicit author.
    func edit(_ ts: TimeSeries<Double>, _ principal: String, _ path: String, _ step: Int) throws {
        let events = model.series[path] ?? []
        let originals = events.filter { $0.original == nil }
        let own = originals.filter { $0.author == principal }
        let target: UInt64
        if !own.isEmpty && rng.chance(450) {
            target = pick(own).sequence
        } else if !originals.isEmpty && rng.chance(850) {
            target = pick(originals).sequence
        } else {
            target = UInt64(rng.below(events.count + 2))
        }
        let author: String? = rng.chance(700) ? nil : rng.chance(600) ? principal : pick(Self.principals)
        let value = Double(rng.below(1000))
        context = "step \(step): \(principal) edits \(target) of \(path)\(author.map { " as \($0)" } ?? "")"
        let granted = model.permissions(principal, path)
        let original = events.first(where: { $0.sequence == target && $0.original == nil })
        let expected: Outcome
        if let author, author != principal {
            expected = .denied(principal: principal, permission: .updateTopic, path: path)
        } else if !granted.contains(.updateTopic) {
            expected = .denied(principal: principal, permission: .updateTopic, path: path)
        } else if let original {
            if granted.contains(.editTimeSeriesEvents) {
                expected = .allowed
            } else if original.author == principal {
                expected = granted.contains(.editOwnTimeSeriesEvents)
                    ? .allowed : .denied(principal: principal, permission: .editOwnTimeSeriesEvents, path: path)
            } else {
                expected = .denied(principal: principal, permission: .editTimeSeriesEvents, path: path)
            }
        } else {
            expected = .invalidArgument
        }
        let m = try call(expected) {
            if let author { try ts.edit(originalSequence: target, value: value, author: author) } else { try ts.edit(originalSequence: target, value: value) }
        }
        if let m {
            let next = UInt64(events.count)
            guard m.sequence == next, m.author == principal else { throw fail("edit \(m), expected sequence \(next) by \(principal)") }
            model.series[path, default: []].append(.init(sequence: next, value: value, author: principal, original: target))
        }
    }

    func checkAppended(_ ms: [EventMetadata], _ values: [Double], _ principal: String, _ path: String, _ next: UInt64) throws {
        for (i, m) in ms.enumerated() {
            guard m.sequence == next + UInt64(i), m.author == principal else {
                throw fail("appended \(m), expected sequence \(next + UInt64(i)) by \(principal)")
            }
            model.series[path, default: []].append(.init(sequence: m.sequence, value: values[i], author: principal, original: nil))
        }
        guard ms.count == values.count else { throw fail("\(ms.count) events appended of \(values.count)") }
    }

    func check(_ events: [Event<Double>], _ expected: [SessionReference.Event], _ what: String) throws {
        let actual = events.map {
            SessionReference.Event(sequence: $0.sequence, value: $0.value, author: $0.author, original: $0.originalEvent?.sequence)
        }
        guard actual == expected else { throw fail("\(what) \(actual), the model has \(expected)") }
    }

    func check(_ messages: [HistoryMessage<JSON>], _ expected: [SessionReference.Message], _ what: String) throws {
        let actual = messages.map { SessionReference.Message(timetoken: $0.timetoken, message: $0.message, publisher: $0.publisher) }
        guard actual == expected else { throw fail("\(what) \(actual), the model has \(expected)") }
    }

    func channelStep(_ step: Int) throws {
        let principal = pick(Self.principals)
        if rng.below(8) == 0 { return try multiChannelRead(principal, step) }
        guard let path = model.channels.keys.sorted().randomElement(using: &rng) else { return try ownerCreate(kind: 1, "a") }
        let ch = try channel(principal, path)
        let messages = model.channels[path] ?? []
        switch rng.below(7) {
        case 0, 1, 2:
            // No publisher, the principal's own, or another's (denied naming .updateTopic).
            let publisher: String? = rng.chance(500) ? nil : rng.chance(500) ? principal : pick(Self.principals)
            let message: JSON = ["n": .int(Int64(rng.below(1000)))]
            context = "step \(step): \(principal) publishes to \(path)\(publisher.map { " as \($0)" } ?? "")"
            let expected = publisher.map { $0 != principal } == true ? .denied(principal: principal, permission: .updateTopic, path: path)
                : expect(principal, path, .updateTopic)
            if let tt = try call(expected, { try ch.publish(message, publisher: publisher) }) {
                guard tt > (messages.last?.timetoken ?? .zero) else { throw fail("timetoken \(tt) not above the channel's last") }
                model.channels[path, default: []].append(.init(timetoken: tt, message: message, publisher: principal))
            }
        case 3:
            context = "step \(step): \(principal) reads the history of \(path)"
            if let page = try call(expect(principal, path, .readTopic), { try ch.history(limit: 100) }) {
                try check(page.messages, model.newest(path, 100), "history")
            }
        case 4:
            let since = messages.isEmpty || rng.chance(300) ? Timetoken.zero : pick(messages).timetoken
            context = "step \(step): \(principal) counts the messages of \(path) since \(since)"
            if let n = try call(expect(principal, path, .readTopic), { try ch.messageCount(since: since) }) {
                let expected = messages.filter { $0.timetoken > since }.count
                guard n == expected else { throw fail("count \(n), the model has \(expected)") }
            }
        default:
            // Everything, or exactly one message.
            let one = messages.isEmpty || rng.chance(300) ? nil : pick(messages).timetoken
            context = "step \(step): \(principal) deletes \(one.map { "message \($0)" } ?? "every message") of \(path)"
            let deleted: Void? = try call(expect(principal, path, .modifyTopic)) {
                if let one { try ch.deleteMessages(start: one - 1, end: one) } else { try ch.deleteMessages() }
            }
            if deleted != nil { model.channels[path]?.removeAll { one == nil || $0.timetoken == one } }
        }
    }

    /// fetchHistory and messageCounts over several channels: the unreadable ones are left out
    /// (no key), never denied.
    func multiChannelRead(_ principal: String, _ step: Int) throws {
        let s = try session(principal)
        var names = Self.paths.filter { _ in rng.chance(400) }
        names.shuffle(using: &rng)
        let readable = names.filter { model.permissions(principal, $0).contains(.readTopic) }
        if rng.chance(500) {
            let limit = 1 + rng.below(4)
            if rng.chance(200), let first = names.first { names.append(first) }
            context = "step \(step): \(principal) fetches the history of \(names) limit \(limit)"
            guard let pages = try call(.allowed, { try s.fetchHistory(channels: names, limit: limit) }) else { return }
            let expectedKeys = Set(readable.filter { !(model.channels[$0] ?? []).isEmpty })
            guard Set(pages.keys) == expectedKeys else { throw fail("channels \(pages.keys.sorted()), the model has \(expectedKeys.sorted())") }
            for (name, page) in pages {
                try check(page.messages, model.newest(name, limit), "page of \(name)")
                guard page.hasMore == ((model.channels[name]?.count ?? 0) > limit) else { throw fail("hasMore of \(name)") }
            }
        } else {
            let all = model.channels.values.flatMap { $0 }.map(\.timetoken).sorted()
            let since = names.map { _ in all.isEmpty || rng.chance(300) ? Timetoken.zero : pick(all) }
            let given = rng.chance(500) || since.isEmpty ? [since.first ?? .zero] : since
            context = "step \(step): \(principal) counts the messages of \(names) since \(given)"
            guard let counts = try call(.allowed, { try s.messageCounts(channels: names, since: given) }) else { return }
            var expected: [String: Int] = [:]
            for (i, name) in names.enumerated() where readable.contains(name) {
                let tt = given.count == 1 ? given[0] : given[i]
                expected[name] = (model.channels[name] ?? []).filter { $0.timetoken > tt }.count
            }
            guard counts == expected else { throw fail("counts \(counts), the model has \(expected)") }
        }
    }

    func documentStep(_ step: Int) throws {
        guard let path = model.databases.keys.sorted().randomElement(using: &rng) else { return try ownerCreate(kind: 2, "a") }
        let principal = pick(Self.principals)
        let db = try database(principal, path)
        let id = pick(Self.documentIDs)
        let stored = model.databases[path] ?? [:]
        switch rng.below(6) {
        case 0, 1:
            let fields: [String: JSON] = ["n": .int(Int64(rng.below(1000))), "by": .string(principal)]
            context = "step \(step): \(principal) saves \(id) in \(path)"
            if try call(expect(principal, path, .updateTopic), { try db.save(Document(id: id, fields: fields)) }) != nil {
                model.databases[path, default: [:]][id] = fields
            }
        case 2:
            context = "step \(step): \(principal) deletes \(id) of \(path)"
            var expected = expect(principal, path, .modifyTopic)
            if expected == .allowed && stored[id] == nil { expected = .notFound }
            if try call(expected, { try db.delete(id: id) }) != nil { model.databases[path]?[id] = nil }
        case 3, 4:
            context = "step \(step): \(principal) reads \(id) of \(path)"
            if let doc = try call(expect(principal, path, .readTopic), { try db.document(id: id) }) {
                guard doc?.fields == stored[id] else { throw fail("document \(String(describing: doc?.fields)), the model has \(String(describing: stored[id]))") }
            }
        default:
            let ids = Self.documentIDs.filter { _ in rng.chance(500) }
            context = "step \(step): \(principal) reads \(ids) of \(path)"
            if let docs = try call(expect(principal, path, .readTopic), { try db.documents(ids: ids) }) {
                let expected = stored.filter { ids.contains($0.key) }
                guard docs.mapValues(\.fields) == expected else { throw fail("documents \(docs.mapValues(\.fields)), the model has \(expected)") }
            }
        }
    }

    enum TransactionWrite: CustomStringConvertible {
        case append(String, Double)
        case publish(String, JSON)
        case save(String, String, [String: JSON])

        var description: String {
            switch self {
            case .append(let p, let v): "append \(v) to \(p)"
            case .publish(let p, let m): "publish \(m) to \(p)"
            case .save(let p, let id, _): "save \(id) in \(p)"
            }
        }
    }

    enum TransactionResult {
        case appended(EventMetadata)
        case published(Timetoken)
        case saved
    }

    /// A few writes to existing collections in one transaction: all of them when every one is
    /// allowed, else none, the denial naming the first write's missing permission.
    func transactionStep(_ step: Int) throws {
        let principal = pick(Self.principals)
        var writes: [TransactionWrite] = []
        for _ in 0..<(1 + rng.below(3)) {
            switch rng.below(3) {
            case 0: if let p = model.series.keys.sorted().randomElement(using: &rng) { writes.append(.append(p, Double(rng.below(1000)))) }
            case 1: if let p = model.channels.keys.sorted().randomElement(using: &rng) { writes.append(.publish(p, ["n": .int(Int64(rng.below(1000)))])) }
            default:
                if let p = model.databases.keys.sorted().randomElement(using: &rng) {
                    writes.append(.save(p, pick(Self.documentIDs), ["n": .int(Int64(rng.below(1000))), "by": .string(principal)]))
                }
            }
        }
        context = "step \(step): \(principal) writes \(writes) in a transaction"
        var expected = Outcome.allowed
        for w in writes {
            let path: String
            switch w {
            case .append(let p, _), .publish(let p, _), .save(let p, _, _): path = p
            }
            expected = expect(principal, path, .updateTopic)
            if expected != .allowed { break }
        }
        let s = try session(principal)
        guard let results = try call(expected, {
            try s.transaction { tx in
                try writes.map { w -> TransactionResult in
                    switch w {
                    case .append(let p, let v):
                        return .appended(try tx.timeSeries(p, of: Double.self).append(v))
                    case .publish(let p, let m):
                        return .published(try tx.channel(p, of: JSON.self).publish(m))
                    case .save(let p, let id, let fields):
                        _ = try tx.documents(p).save(Document(id: id, fields: fields))
                        return .saved
                    }
                }
            }
        }) else { return }
        for (w, r) in zip(writes, results) {
            switch (w, r) {
            case (.append(let p, let v), .appended(let m)): try checkAppended([m], [v], principal, p, UInt64(model.series[p]?.count ?? 0))
            case (.publish(let p, let message), .published(let tt)): model.channels[p, default: []].append(.init(timetoken: tt, message: message, publisher: principal))
            case (.save(let p, let id, let fields), .saved): model.databases[p, default: [:]][id] = fields
            default: throw fail("transaction result \(r) for \(w)")
            }
        }
    }

    // MARK: Verification

    func reopen() throws {
        try store.close()
        sessions = [:]
        seriesHandles = [:]
        channelHandles = [:]
        databaseHandles = [:]
        store = try Store.open(at: directory.url, options: StoreOptions(durability: .buffered))
        tally.reopens += 1
        try checkStored(try store.securityPolicy())
        try verifyAll()
    }

    /// The catalog holds exactly the model's collections (a denied create created nothing).
    func verifyCatalog() throws {
        let snapshot = try store.engine.snapshot()
        for (kind, names) in [(CollectionKind.timeSeries, Set(model.series.keys)), (.channel, Set(model.channels.keys)),
                              (.documentDatabase, Set(model.databases.keys))] {
            let stored = Set(try Catalog.entries(kind: kind, in: snapshot).map(\.name))
            guard stored == names else { throw fail("catalog of \(kind): \(stored.sorted()), the model has \(names.sorted())") }
        }
    }

    /// Everything the store holds, read through the owner's handles, equals the model.
    func verifyAll() throws {
        try verifyCatalog()
        for (path, events) in model.series {
            try check(try store.timeSeries(path, of: Double.self).query(.edits(.all)).events, events, "events of \(path)")
        }
        for (name, _) in model.channels {
            try check(try store.channel(name, of: JSON.self).history(limit: 100).messages, model.newest(name, 100), "messages of \(name)")
        }
        for (name, documents) in model.databases {
            let stored = try store.documents(name).documents(ids: Self.documentIDs).mapValues(\.fields)
            guard stored == documents else { throw fail("documents of \(name): \(stored), the model has \(documents)") }
        }
    }
}

import Foundation
import Logging
import Synchronization
import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// The one record of damage met by background work (issue 22): counted in all and by component,
// the latest kept, logged at `.error` with a limit per component.

@Suite("DamageRecorder")
struct DamageRecorderTests {
    static let a = DamageComponent(rawValue: "a")
    static let b = DamageComponent(rawValue: "b")
    static func error(_ i: Int) -> StrataError { .corrupted(file: "f", offset: i, reason: "test") }

    @Test("counts in all and by component, keeps the latest 16 oldest first, and does not count a close")
    func counts() {
        let recorder = DamageRecorder(log: .silent)
        for i in 0..<20 { recorder.record(Self.a, at: "k\(i)", Self.error(i)) }
        recorder.record(Self.b, Self.error(20))
        recorder.record(Self.b, .closed)
        let c = recorder.counts
        #expect(c.total == 21)
        #expect(c.byComponent == [Self.a: 20, Self.b: 1])
        #expect(c.recent.count == DamageRecorder.recentLimit)
        #expect(c.recent.map(\.error) == (5...20).map(Self.error))
        #expect(c.recent.last?.subject == nil && c.recent.first?.subject == "k5")
        #expect(c.recent.last?.description == "b: \(Self.error(20))")
        #expect(c.recent.first?.description == "a at k5: \(Self.error(5))")
    }

    @Test("logs a component's first damage at .error, then at most once per interval with the number not logged")
    func rateLimitedLog() throws {
        let (logger, record) = CapturingLogHandler.logger()
        let log = EngineLog(logger: logger, directory: "/store")
        let clock = Atomic<UInt64>(1_000)
        let recorder = DamageRecorder(log: log, logInterval: .seconds(60)) { clock.load(ordering: .relaxed) }
        for i in 0..<100 { recorder.record(Self.a, at: "k", Self.error(i)) }
        recorder.record(Self.b, Self.error(100))
        clock.add(59_000_000_000, ordering: .relaxed)
        recorder.record(Self.a, at: "k", Self.error(101))
        log.drain()
        var errors = record.at(.error)
        try #require(errors.count == 2, "\(record.all)")
        #expect(errors.map { $0.metadata["component"] } == ["a", "b"])
        #expect(errors[0].metadata["subject"] == "k" && errors[0].metadata["error"] == "\(Self.error(0))")
        #expect(errors[0].metadata["count"] == "1" && errors[0].metadata["unlogged"] == "0")
        #expect(errors[1].metadata["subject"] == nil && errors[0].metadata["strata.store"] == "/store")
        clock.add(1_000_000_000, ordering: .relaxed)  // 60 s after a's first message
        recorder.record(Self.a, at: "k", Self.error(102))
        recorder.record(Self.a, at: "k", Self.error(103))
        log.drain()
        errors = record.at(.error)
        try #require(errors.count == 3, "\(record.all)")
        #expect(errors[2].metadata["count"] == "102")
        #expect(errors[2].metadata["unlogged"] == "100", "99 after the first, and one at 59 s")
        #expect(errors[2].metadata["error"] == "\(Self.error(102))")
        #expect(recorder.counts.byComponent[Self.a] == 103)
    }
}

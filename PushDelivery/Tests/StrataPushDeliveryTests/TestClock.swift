import Foundation
import Synchronization

/// A wall clock the tests move.
final class TestClock: Sendable {
    private let date = Mutex(Date(timeIntervalSince1970: 1_700_000_000))
    var now: Date { date.withLock { $0 } }
    func advance(seconds: TimeInterval) { date.withLock { $0 = $0.addingTimeInterval(seconds) } }
    var function: @Sendable () -> Date { { self.now } }
}

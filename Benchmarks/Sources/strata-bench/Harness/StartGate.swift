import Foundation

/// Holds the threads of a parallel phase (``ParallelReads``) before their first timed operation
/// until every thread is there, so that they start timing together: the phase's wall time then
/// spans operations running at once, not threads starting one after the other. A thread that
/// ends without a timed operation passes without waiting.
final class StartGate {
    private let condition = NSCondition()
    private var missing: Int

    init(threads: Int) {
        missing = threads
    }

    /// Counts this thread in; with `wait`, returns once every thread is counted.
    func arrive(wait: Bool) {
        condition.lock()
        defer { condition.unlock() }
        missing -= 1
        if missing <= 0 {
            condition.broadcast()
        } else if wait {
            while missing > 0 { condition.wait() }
        }
    }
}

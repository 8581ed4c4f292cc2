import Foundation

/// Runs the timed operations of a read workload (``Workload/runsInThreads``) on `--threads`
/// threads at once. Each thread gets its index (for ``seed(_:thread:)`` and its engine handle),
/// its share of the run's operations (the same total, split as evenly as it divides) and a
/// ``Recorder`` of its own; the threads start timing together (``StartGate``), and when every thread has finished, their recorders are merged into the
/// run's, with the wall time of the parallel phase. With one thread, `body` runs on the calling
/// thread with the run's recorder.
enum ParallelReads {
    static func run(_ run: RunContext, recorder: Recorder,
                    _ body: @escaping (_ thread: Int, _ operations: Int, _ recorder: Recorder) throws -> Void) throws {
        let threads = run.config.threads
        guard threads > 1 else { return try body(0, run.operations, recorder) }
        let shares = (0..<threads).map { run.operations / threads + ($0 < run.operations % threads ? 1 : 0) }
        let phase = Phase(body: body, recorders: recorder.threadRecorders(shares), shares: shares)
        let group = DispatchGroup()
        for t in 0..<threads {
            group.enter()
            let thread = Thread {
                defer { group.leave() }
                phase.run(t)
            }
            thread.stackSize = 8 << 20
            thread.start()
        }
        group.wait()
        if let error = phase.error { throw error }
        recorder.merge(phase.recorders)
    }

    /// The seed of thread `thread`'s random choices: `base` itself for the first thread (so that
    /// one thread makes the choices a run without `--threads` makes), another stream for each other.
    static func seed(_ base: UInt64, thread: Int) -> UInt64 {
        base &+ UInt64(thread) &* 0x9E37_79B9_7F4A_7C15
    }

    /// What the threads of one phase share. Unchecked: each thread uses only its own recorder,
    /// engine handle and share; the first error is kept under a lock; the caller reads the
    /// recorders after joining every thread.
    private final class Phase: @unchecked Sendable {
        let body: (Int, Int, Recorder) throws -> Void
        let recorders: [Recorder]
        let shares: [Int]
        private let lock = NSLock()
        private var failure: (any Error)?

        init(body: @escaping (Int, Int, Recorder) throws -> Void, recorders: [Recorder], shares: [Int]) {
            self.body = body
            self.recorders = recorders
            self.shares = shares
        }

        var error: (any Error)? { lock.withLock { failure } }

        func run(_ t: Int) {
            defer { recorders[t].passGate(wait: false) }
            do {
                try body(t, shares[t], recorders[t])
            } catch {
                lock.withLock { if failure == nil { failure = error } }
            }
        }
    }
}

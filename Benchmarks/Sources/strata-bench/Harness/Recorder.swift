import Histogram

/// Times the operations of one run: one latency sample per operation into an HdrHistogram
/// (nanoseconds, 3 significant digits), and totals of items and payload bytes. Not thread-safe:
/// a run on several threads gives each its own (``threadRecorders(_:)``) and merges them
/// (``merge(_:)``).
final class Recorder {
    private(set) var histogram = Histogram<UInt64>(lowestDiscernibleValue: 1,
                                                   highestTrackableValue: 3_600_000_000_000,
                                                   numberOfSignificantValueDigits: .three)
    /// Sum of the operations' durations.
    private(set) var nanoseconds: UInt64 = 0
    /// Items (records, events, rows) the operations handled, and their payload bytes.
    private(set) var items = 0
    private(set) var bytes = 0
    private(set) var operations = 0
    /// When the first timed operation started and the last one ended (``Clock`` nanoseconds).
    private(set) var firstStart: UInt64 = .max
    private(set) var lastEnd: UInt64 = 0
    /// The wall time of a phase timed on several threads (from the first operation's start to the
    /// last one's end, over every thread), set by ``merge(_:)``; nil for a run on one thread.
    private(set) var wallNanoseconds: UInt64?
    private let progress: ProgressBar?
    private var expected: Int
    /// The gate of a parallel phase, passed before the first timed operation (``threadRecorders(_:)``).
    private var gate: StartGate?

    init(progress: ProgressBar?, expectedOperations: Int, gate: StartGate? = nil) {
        self.progress = progress
        self.expected = max(expectedOperations, 1)
        self.gate = gate
    }

    /// Tells the progress bar how many operations the run will time (when it differs from the
    /// estimate the runner gave).
    func expect(_ operations: Int) {
        expected = max(operations, 1)
    }

    /// Times `body` as one operation handling `items` items of `bytes` payload bytes in all.
    @inline(__always)
    func measure<R>(items: Int, bytes: Int, _ body: () throws -> R) rethrows -> R {
        if gate != nil { passGate(wait: true) }
        let start = Clock.nanoseconds()
        let result = try body()
        tally(start: start, elapsed: Clock.nanoseconds() - start, items: items, bytes: bytes)
        return result
    }

    /// Times `body` as one operation that returns the items and payload bytes it handled.
    @inline(__always)
    func measureWork(_ body: () throws -> (items: Int, bytes: Int)) rethrows -> (items: Int, bytes: Int) {
        if gate != nil { passGate(wait: true) }
        let start = Clock.nanoseconds()
        let work = try body()
        tally(start: start, elapsed: Clock.nanoseconds() - start, items: work.items, bytes: work.bytes)
        return work
    }

    /// Records one operation timed elsewhere (by a child process) as taking `elapsed` nanoseconds.
    func record(nanoseconds elapsed: UInt64, items: Int, bytes: Int) {
        let end = Clock.nanoseconds()
        tally(start: end &- elapsed, elapsed: elapsed, items: items, bytes: bytes)
        progress?.update(done: operations, of: expected)
    }

    @inline(__always)
    private func tally(start: UInt64, elapsed: UInt64, items: Int, bytes: Int) {
        _ = histogram.record(Swift.max(elapsed, 1))
        nanoseconds &+= elapsed
        self.items &+= items
        self.bytes &+= bytes
        operations &+= 1
        if firstStart == .max { firstStart = start }
        lastEnd = start &+ elapsed
        if operations & 63 == 0 { progress?.update(done: operations, of: expected) }
    }

    /// Reports progress of untimed preparation (loading data before a read workload).
    func preparing(done: Int, of total: Int) {
        progress?.update(done: done, of: max(total, 1), preparing: true)
    }

    /// One recorder per thread of a parallel phase, expecting `shares[i]` operations each, all
    /// behind one ``StartGate``; the first one draws this recorder's progress bar.
    func threadRecorders(_ shares: [Int]) -> [Recorder] {
        let gate = StartGate(threads: shares.count)
        return shares.enumerated().map {
            Recorder(progress: $0.offset == 0 ? progress : nil, expectedOperations: $0.element, gate: gate)
        }
    }

    /// Passes the start gate if this recorder has one it has not passed yet: before the first
    /// timed operation (waiting for the other threads), or when its thread ends (without waiting).
    func passGate(wait: Bool) {
        guard let gate else { return }
        self.gate = nil
        gate.arrive(wait: wait)
    }

    /// Adds the operations of `recorders` (a parallel phase's, all finished) to this one, and
    /// sets ``wallNanoseconds`` to the span of that phase.
    func merge(_ recorders: [Recorder]) {
        var first = UInt64.max, last: UInt64 = 0
        for r in recorders where r.operations > 0 {
            histogram.add(r.histogram)
            nanoseconds &+= r.nanoseconds
            items &+= r.items
            bytes &+= r.bytes
            operations &+= r.operations
            first = Swift.min(first, r.firstStart)
            last = Swift.max(last, r.lastEnd)
        }
        firstStart = Swift.min(firstStart, first)
        lastEnd = Swift.max(lastEnd, last)
        wallNanoseconds = last > first ? last - first : 0
    }
}

import Histogram

/// Times the operations of one run: one latency sample per operation into an HdrHistogram
/// (nanoseconds, 3 significant digits), and totals of items and payload bytes.
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
    private let progress: ProgressBar
    private var expected: Int

    init(progress: ProgressBar, expectedOperations: Int) {
        self.progress = progress
        self.expected = max(expectedOperations, 1)
    }

    /// Tells the progress bar how many operations the run will time (when it differs from the
    /// estimate the runner gave).
    func expect(_ operations: Int) {
        expected = max(operations, 1)
    }

    /// Times `body` as one operation handling `items` items of `bytes` payload bytes in all.
    @inline(__always)
    func measure<R>(items: Int, bytes: Int, _ body: () throws -> R) rethrows -> R {
        let start = Clock.nanoseconds()
        let result = try body()
        let elapsed = Clock.nanoseconds() - start
        _ = histogram.record(Swift.max(elapsed, 1))
        nanoseconds &+= elapsed
        self.items &+= items
        self.bytes &+= bytes
        operations &+= 1
        if operations & 63 == 0 { progress.update(done: operations, of: expected) }
        return result
    }

    /// Times `body` as one operation that returns the items and payload bytes it handled.
    @inline(__always)
    func measureWork(_ body: () throws -> (items: Int, bytes: Int)) rethrows -> (items: Int, bytes: Int) {
        let start = Clock.nanoseconds()
        let work = try body()
        let elapsed = Clock.nanoseconds() - start
        _ = histogram.record(Swift.max(elapsed, 1))
        nanoseconds &+= elapsed
        items &+= work.items
        bytes &+= work.bytes
        operations &+= 1
        if operations & 63 == 0 { progress.update(done: operations, of: expected) }
        return work
    }

    /// Records one operation timed elsewhere (by a child process) as taking `elapsed` nanoseconds.
    func record(nanoseconds elapsed: UInt64, items: Int, bytes: Int) {
        _ = histogram.record(Swift.max(elapsed, 1))
        nanoseconds &+= elapsed
        self.items &+= items
        self.bytes &+= bytes
        operations &+= 1
        progress.update(done: operations, of: expected)
    }

    /// Reports progress of untimed preparation (loading data before a read workload).
    func preparing(done: Int, of total: Int) {
        progress.update(done: done, of: max(total, 1), preparing: true)
    }
}

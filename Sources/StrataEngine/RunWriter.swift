@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles

/// Writes one sorted run: records in key order into as many segment files as the target size
/// asks for, plus the run's range tombstones. Used by flushes and compactions alike.
package final class RunWriter {
    private let directory: String
    private let fileSystem: FileSystem
    private let options: SegmentWriterOptions
    private let targetFileSize: Int
    private let allocateNumber: () throws -> UInt64
    private var current: SegmentWriter?
    private var finished: [SegmentMetadata] = []
    private var pendingTombstones: [RangeTombstone] = []

    package init(directory: String, fileSystem: FileSystem, options: SegmentWriterOptions, targetFileSize: Int,
                 allocateNumber: @escaping () throws -> UInt64) {
        self.directory = directory
        self.fileSystem = fileSystem
        self.options = options
        self.targetFileSize = targetFileSize
        self.allocateNumber = allocateNumber
    }

    private func writer() throws -> SegmentWriter {
        if let current { return current }
        let w = try SegmentWriter(directory: directory, number: try allocateNumber(), options: options, fileSystem: fileSystem)
        // The run's range tombstones go into its first segment; they apply to older runs only.
        for t in pendingTombstones { w.addRangeTombstone(start: t.start, end: t.end) }
        pendingTombstones = []
        current = w
        return w
    }

    package func add(key: UnsafeRawBufferPointer, kind: RecordKind, value: UnsafeRawBufferPointer) throws {
        let w = try writer()
        try w.add(key: key, kind: kind, value: value)
        if w.estimatedFileSize >= targetFileSize {
            finished.append(try w.finish())
            current = nil
        }
    }

    /// Adds the run's range tombstones; they are stored with the run's first segment.
    package func addRangeTombstones(_ tombstones: [RangeTombstone]) {
        if let current {
            for t in tombstones { current.addRangeTombstone(start: t.start, end: t.end) }
        } else {
            pendingTombstones.append(contentsOf: tombstones)
        }
    }

    /// Finishes the last file; returns every file written (none if the run is empty).
    package func finish() throws -> [SegmentMetadata] {
        if !pendingTombstones.isEmpty { _ = try writer() }
        if let w = current {
            if w.isEmpty { w.abandon() } else { finished.append(try w.finish()) }
            current = nil
        }
        return finished
    }

    /// Deletes everything written so far; returns the first deletion that failed (recovery
    /// deletes such unpublished files at the next open).
    @discardableResult
    package func abandon() -> StrataError? {
        var failure = current?.abandon()
        current = nil
        for m in finished {
            let path = directory + "/" + FileNames.segment(m.number)
            do { try fileSystem.remove(path) } catch {
                if failure == nil { failure = error as? StrataError ?? .io(path: path, errno: Errno.ioError.code, operation: "unlink") }
            }
        }
        finished = []
        return failure
    }
}

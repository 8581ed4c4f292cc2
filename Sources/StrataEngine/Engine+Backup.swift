@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles

// Online backup (FORMAT.md 9.6): a copy of the store at one sequence, taken while writes go on.
// The engine's lock is held only to note what the copy needs; the files are linked and copied
// outside it.
extension Engine {
    /// What a backup did, for tests and the benchmark.
    package struct BackupReport: Sendable, Equatable {
        /// The sequence number the copy holds every write up to, and nothing after.
        package var sequence: UInt64 = 0
        /// Segments hard-linked into the backup, and segments copied (where `link(2)` was refused).
        package var segmentsLinked = 0
        package var segmentsCopied = 0
        /// Logs copied (each up to its last committed record).
        package var logsCopied = 0
        /// Bytes written into the backup by copying (segments copied and logs).
        package var bytesCopied = 0
    }

    /// What the lock-held part of a backup notes: a consistent state at one sequence.
    private struct BackupSource {
        /// The manifest of the state, and its version: holding the version keeps every listed
        /// segment's file on disk (an obsolete segment is deleted only when its reader goes).
        var manifest: Manifest
        var version: Version
        var sequence: UInt64
        /// The live logs, oldest first, each open (a flush may delete the name meanwhile; the open
        /// descriptor still reads the file) with the length to copy.
        var logs: [(number: UInt64, file: SystemFile, length: Int?)]
    }

    /// Copies the store, at one sequence, into `target`, which must not exist or be empty, while
    /// writes go on (FORMAT.md 9.6). The copy holds every write visible when it was called (every
    /// acknowledged one, `.buffered` ones included: a write is handed to the OS before it is
    /// acknowledged) and nothing written after that moment, and opens as a store.
    ///
    /// The engine's lock is held only to note the current segments, the manifest's counters, the
    /// live logs (opened there, so that a flush deleting one cannot pull it away) and the length
    /// of the active log at its last committed record. Then, outside it: the marker
    /// `BACKUP-INCOMPLETE` is created and made durable in `target`; each segment is hard-linked
    /// (copied where `link(2)` is refused) and each log copied up to its noted length, each copy
    /// synced; the manifest is written (``Manifest/write(directory:fileSystem:key:)``, sealed with
    /// the store's key, which syncs the directory); the marker is removed and the directory
    /// synced again. Open refuses a directory holding the marker, so a crash at any point leaves
    /// a target that is refused, never half a store; the source is only read. An encrypted
    /// store's copy is encrypted: its files are copied as they are.
    ///
    /// - Throws: ``StrataError/invalidArgument(argument:reason:)`` (`directory`) when `target`
    ///   is the store's own directory or inside it, is not a directory, or is not empty;
    ///   ``StrataError/io(path:errno:operation:)`` for a failed system call (the source is
    ///   unchanged; the target may be left with its marker); ``StrataError/closed``.
    ///
    /// `capturing`, for tests, is given a snapshot of exactly the state the copy holds.
    @discardableResult
    package func backup(to target: String, capturing: ((Snapshot) -> Void)? = nil) throws -> BackupReport {
        let files = options.fileSystem
        try checkBackupTarget(target)
        let (source, snapshot) = try captureBackupSource(snapshot: capturing != nil)
        if let snapshot { capturing?(snapshot) }
        defer { for log in source.logs { log.file.close() } }
        var report = BackupReport()
        report.sequence = source.sequence

        // The target: empty, then the marker, durable before any store file is there.
        try files.createDirectory(target)
        guard try files.listDirectory(target).isEmpty else {
            throw StrataError.invalidArgument(argument: "directory", reason: "the backup directory \(target) is not empty")
        }
        let marker = target + "/" + FileNames.backupMarker
        do {
            try files.withFile(marker, flags: [.writeOnly, .create, .exclusive]) { try $0.sync() }
        } catch StrataError.io(path: _, errno: let code, operation: "open") where code == Errno.fileExists.code {
            throw StrataError.invalidArgument(argument: "directory", reason: "the backup directory \(target) is not empty")
        }
        try files.syncDirectory(target)

        for run in source.manifest.runs {
            for s in run {
                let name = FileNames.segment(s.number)
                do {
                    try files.link(directory + "/" + name, target + "/" + name)
                    report.segmentsLinked += 1
                } catch StrataError.io(path: _, errno: let code, operation: "link") where Errno.hardLinkRefusals.contains(Errno(code: code)) {
                    try files.withFile(directory + "/" + name, flags: .readOnly) { from in
                        report.bytesCopied += try Self.copy(from, length: Int(s.fileSize), to: target + "/" + name, fileSystem: files)
                    }
                    report.segmentsCopied += 1
                }
            }
        }
        for log in source.logs {
            let length = try log.length ?? log.file.size()
            report.bytesCopied += try Self.copy(log.file, length: length, to: target + "/" + FileNames.log(log.number),
                                                fileSystem: files)
            report.logsCopied += 1
        }
        withExtendedLifetime(source.version) {}

        // The manifest last: the one function every manifest goes through, which syncs the
        // directory after its rename, so every name above is durable with it.
        var manifest = source.manifest
        manifest.formatVersion = Manifest.version
        manifest.lastSequence = max(manifest.lastSequence, source.sequence)
        try manifest.write(directory: target, fileSystem: files, key: options.encryptionKey)
        try files.remove(marker)
        try files.syncDirectory(target)
        diagnostics(.info, "Backed up the store", [
            "target": "\(target)", "sequence": "\(report.sequence)", "segments.linked": "\(report.segmentsLinked)",
            "segments.copied": "\(report.segmentsCopied)", "logs": "\(report.logsCopied)", "bytes.copied": "\(report.bytesCopied)",
        ])
        return report
    }

    /// Refuses a target that is the store's directory or inside it (the store would list, and its
    /// destroy remove, the backup's files), or that is something other than a directory.
    private func checkBackupTarget(_ target: String) throws {
        let files = options.fileSystem
        func refuse(_ reason: String) -> StrataError { .invalidArgument(argument: "directory", reason: reason) }
        let own = try files.realPath(directory)
        // The target need not exist: resolve its deepest existing ancestor and append the rest.
        var existing = target
        var rest: [Substring] = []
        while !(try files.exists(existing)) {
            var trimmed = Substring(existing)
            while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
            guard let slash = trimmed.lastIndex(of: "/") else {
                rest.insert(trimmed, at: 0)
                existing = "."
                break
            }
            rest.insert(trimmed[trimmed.index(after: slash)...], at: 0)
            existing = slash == trimmed.startIndex ? "/" : String(trimmed[..<slash])
        }
        var resolved = try files.realPath(existing)
        for component in rest where !component.isEmpty && component != "." {
            resolved = resolved == "/" ? "/" + component : resolved + "/" + component
        }
        if resolved == own || resolved.hasPrefix(own == "/" ? "/" : own + "/") {
            throw refuse("the backup directory \(target) is the store's own directory or inside it")
        }
        if rest.isEmpty, try !files.isDirectory(existing) {
            throw refuse("the backup directory \(target) exists and is not a directory")
        }
    }

    /// Notes, under the lock and without waiting for a commit under way, the state every write
    /// visible now belongs to.
    private func captureBackupSource(snapshot: Bool) throws -> (BackupSource, Snapshot?) {
        lock.lock()
        defer { lock.unlock() }
        if closed { throw StrataError.closed }
        // Logs the manifest does not cover, each tied to a memtable: the active log is cut at
        // its last committed record, the others (switched away from) are complete.
        var numbers = Set<UInt64>()
        for memtable in readableMemtables {
            for n in memtable.logNumbers where n >= manifest.logNumber { numbers.insert(n) }
        }
        var logs: [(number: UInt64, file: SystemFile, length: Int?)] = []
        do {
            for n in numbers.sorted() {
                let file = try options.fileSystem.open(directory + "/" + FileNames.log(n), flags: .readOnly)
                logs.append((n, file, n == log.number ? committedLogSize : nil))
            }
        } catch {
            for log in logs { log.file.close() }
            throw error
        }
        let sequence = visibleSequence.load(ordering: .acquiring)
        return (BackupSource(manifest: manifest, version: version, sequence: sequence, logs: logs),
                snapshot ? Snapshot(sequence: sequence, memtables: readableMemtables, version: version) : nil)
    }

    /// Copies the first `length` bytes of `source` into a new file `path`, synced; returns
    /// `length`. A source shorter than `length` is corruption (a segment shorter than its
    /// manifest entry, a log shorter than what was committed to it).
    private static func copy(_ source: SystemFile, length: Int, to path: String, fileSystem: FileSystem) throws -> Int {
        try fileSystem.withFile(path, flags: [.writeOnly, .create, .exclusive]) { out in
            let chunk = 1 << 20
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: min(max(length, 1), chunk), alignment: 16)
            defer { buffer.deallocate() }
            var offset = 0
            while offset < length {
                let want = min(buffer.count, length - offset)
                let n = try source.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<want]), at: offset)
                guard n == want else {
                    throw StrataError.corrupted(file: source.path, offset: offset + n,
                                                reason: "the file ends at \(offset + n) bytes, \(length) were expected")
                }
                try out.write(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
                offset += n
            }
            try out.sync()
        }
        return length
    }
}

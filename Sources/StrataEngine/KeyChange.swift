@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles

/// Re-encrypting a closed store with another key, or none (``Store/changeEncryptionKey(at:from:to:)``,
/// FORMAT.md 9.5).
///
/// 1. Open the store with the old key, write every record to segments (`compactAll`), close.
/// 2. Under the store's lock: check that no log holds a record (no writer came in between), then
///    copy each segment's records into a new segment sealed with the new key, create the log the
///    new manifest names (empty, sealed with the new key), sync them and the directory.
/// 3. Replace the manifest with one sealed with the new key that lists the new segments (6.3).
/// 4. Delete the old segments and logs.
///
/// A crash before step 3's rename leaves the old manifest, which opens with the old key: the new
/// segments are unlisted (deleted at open), and the new log holds no record, which recovery takes
/// for an empty log whatever its key. A crash after it leaves the new manifest, which opens with
/// the new key: everything it lists was synced before, and the old files are below its log
/// number or unlisted. No instant leaves a store that neither key opens.
package enum KeyChange {
    /// REQUIRES: the store is not open in this process (the caller checks); another process
    /// holding it makes this throw ``StrataError/locked(path:)``.
    package static func change(directory: String, options: EngineOptions, to newKey: EncryptionKey?) throws {
        let fs = options.fileSystem
        let oldKey = options.encryptionKey
        guard try Manifest.read(directory: directory, fileSystem: fs, key: oldKey) != nil else {
            throw StrataError.notFound(kind: .store, name: directory, reason: "no Strata store at \(directory) (no \(FileNames.manifest))")
        }
        let engine = try Engine(directory: directory, options: options)
        do { try engine.compactAll() } catch {
            try? engine.close()
            throw error
        }
        try engine.close()

        let lock = try FileLock(path: directory + "/" + FileNames.lock, fileSystem: fs)
        defer { lock.release() }
        guard var manifest = try Manifest.read(directory: directory, fileSystem: fs, key: oldKey) else {
            throw StrataError.notFound(kind: .store, name: directory, reason: "no Strata store at \(directory) (no \(FileNames.manifest))")
        }
        var next = manifest.nextFileNumber
        var oldLogs: [UInt64] = []
        for name in try fs.listDirectory(directory) {
            switch FileNames.parse(name) {
            case .log(let n):
                oldLogs.append(n)
                next = max(next, try CounterLimit.next(after: n, "file number", file: directory + "/" + name))
            case .segment(let n):
                next = max(next, try CounterLimit.next(after: n, "file number", file: directory + "/" + name))
            default: break
            }
        }
        for n in oldLogs where n >= manifest.logNumber {
            let log = try LogReader(path: directory + "/" + FileNames.log(n), fileSystem: fs, key: oldKey)
            guard log.records.isEmpty else {
                throw StrataError.conflict("the store at \(directory) was written while its key was being changed; nothing was changed, try again")
            }
        }
        let oldSegments = manifest.runs.joined().map(\.number)
        var written: [String] = []
        var mayHaveReplaced = false
        do {
            var segmentOptions = options.segment
            segmentOptions.encryptionKey = newKey
            var runs: [[SegmentMetadata]] = []
            for run in manifest.runs {
                var copied: [SegmentMetadata] = []
                for s in run {
                    let reader = try SegmentReader(path: directory + "/" + FileNames.segment(s.number), number: s.number, cache: nil,
                                                   expectedSize: Int(s.fileSize), fileSystem: fs, key: oldKey)
                    let number = try CounterLimit.take(from: &next, "file number", last: CounterLimit.max - 1)
                    let writer = try SegmentWriter(directory: directory, number: number, options: segmentOptions, fileSystem: fs)
                    do {
                        let c = SegmentCursor(reader)
                        try c.seekToFirst()
                        while c.isValid {
                            let (kind, value) = (c.kind, c.value)
                            try c.withKey { try writer.add(key: $0, kind: kind, value: value) }
                            try c.next()
                        }
                        for t in reader.rangeTombstones { writer.addRangeTombstone(start: t.start, end: t.end) }
                        copied.append(try writer.finish())
                        written.append(writer.finalPath)
                    } catch {
                        writer.abandon()
                        throw error
                    }
                }
                runs.append(copied)
            }
            let logNumber = try CounterLimit.take(from: &next, "file number", last: CounterLimit.max - 1)
            let logPath = directory + "/" + FileNames.log(logNumber)
            let log = try LogWriter(path: logPath, number: logNumber, fileSystem: fs, key: newKey)
            written.append(logPath)
            do { try log.sync() } catch {
                log.close()
                throw error
            }
            log.close()
            try fs.syncDirectory(directory)
            manifest.runs = runs
            manifest.logNumber = logNumber
            manifest.nextFileNumber = next
            try manifest.write(directory: directory, fileSystem: fs, key: newKey, mayHaveReplaced: &mayHaveReplaced)
        } catch {
            // Before the rename nothing names the new files; after it (or when it is unknown) they
            // are the store's.
            if !mayHaveReplaced { for path in written { try? fs.remove(path) } }
            throw error
        }
        // Unlisted now: a deletion that fails is retried by the next open.
        for n in oldSegments { try? fs.remove(directory + "/" + FileNames.segment(n)) }
        for n in oldLogs { try? fs.remove(directory + "/" + FileNames.log(n)) }
        try? fs.syncDirectory(directory)
    }
}

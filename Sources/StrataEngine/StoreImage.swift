@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles

/// The state of a store read from its files without opening it: no lock is taken and nothing is
/// written, so tools may read a store that another process has open (what they see is then the
/// state at some moment of that process's writes, with a torn log tail left out).
package enum StoreImage {
    /// A snapshot of everything the files in `directory` hold: the manifest's segments plus the
    /// records of the logs it does not cover. Segments are read without a block cache. `key`
    /// opens an encrypted store's files.
    package static func snapshot(directory: String, fileSystem: FileSystem = .real, key: EncryptionKey? = InspectionKey.current) throws -> Snapshot {
        guard let manifest = try Manifest.read(directory: directory, fileSystem: fileSystem, key: key) else {
            throw StrataError.notFound(kind: .store, name: directory, reason: "no Strata store at \(directory) (no \(FileNames.manifest))")
        }
        var runs: [SortedRun] = []
        for run in manifest.runs {
            var readers: [SegmentReader] = []
            for s in run {
                let path = directory + "/" + FileNames.segment(s.number)
                readers.append(try SegmentReader(path: path, number: s.number, cache: nil, expectedSize: Int(s.fileSize), fileSystem: fileSystem, key: key))
            }
            runs.append(SortedRun(segments: readers))
        }
        var logs: [UInt64] = []
        for name in try fileSystem.listDirectory(directory) {
            if case .log(let n) = FileNames.parse(name), n >= manifest.logNumber { logs.append(n) }
        }
        var batches: [ReplayedTable.View] = []
        var owners: [AnyObject] = []
        // The check recovery makes before it replays a record (sequence numbers that increase
        // and stay below the limit, so that applying them cannot overflow): the inspectors read
        // hostile logs too, and refuse what open refuses instead of trapping.
        var check = LogReplayCheck()
        for n in logs.sorted() {
            let path = directory + "/" + FileNames.log(n)
            let reader = try LogReader(path: path, fileSystem: fileSystem, key: key)
            owners.append(reader.storage)
            for record in reader.views {
                try check.check(record, path: path, decodingOperations: false)
                batches.append(ReplayedTable.View(payload: record.payload, file: path, offset: record.offset))
            }
        }
        let table = try ReplayedTable(replaying: batches, keeping: owners)
        let memtable = Memtable(logNumber: 0, replayed: table)
        var lastSequence = manifest.lastSequence
        if let highest = table.highestSequence { lastSequence = max(lastSequence, highest) }
        return Snapshot(sequence: lastSequence, memtables: [memtable], version: Version(runs: runs))
    }
}

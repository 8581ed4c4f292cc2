import Foundation
import Synchronization
@testable import Strata
import Testing
@testable import StrataInspection
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Simulates power loss on one store directory, from the system calls the engine reports to
/// ``IOObserver``, by taking "crash clones" (as Pebble's crash-cloning filesystem and redb's crash
/// backend do): at a random system call the simulator writes into a new directory what a power cut
/// at that instant would leave, while the store keeps running. The test opens each clone later.
///
/// The media model (FORMAT.md §9.1), pessimistic wherever the OS may choose:
/// - Files are known by identity, not by name: each file the directory holds gets an id when it is
///   created (`open` with `O_CREAT`, told apart from an existing file by its inode), and renames
///   and unlinks move or drop names of ids. An inode number reused after an unlink is a new id.
/// - A file's durable content is exactly what it held when its last `fdatasync` returned (read
///   back through `/proc/self/fd`, so the descriptor names the file whatever its name is now):
///   data and size together, since `fdatasync` covers the size needed to read the data. Writes
///   and `ftruncate` after that sync are lost (but see torn appends below); a file never synced
///   comes back empty.
/// - A directory's durable entries are exactly the names (and the ids they pointed to) it held
///   when its last `fsync` returned. Half the cuts undo every create, rename and unlink after
///   that: a renamed file reappears under its old name, a deleted one comes back with its synced
///   content, a new one is absent. Each `rename` is atomic: a name points to the old file or to
///   the new one.
/// - The other half keep some of the creates, renames and unlinks made since the last directory
///   sync (each one whole, in order, where its source name still holds its file): a random subset,
///   or only those of the file changed last (a manifest renamed into place while the segments it
///   lists are not). The OS may write any of them back before the power goes, in any order.
/// - Half the cuts keep, of each file that only grew since its last sync, a random prefix of
///   the bytes appended since (a torn log tail, cut anywhere, even inside a record header).
/// - Nothing else is lost or reordered: bytes durable before a cut never change, and what a sync
///   captured is a prefix-closed state (a write racing a sync may be captured whole; the OS may
///   write pages back at any time, so that outcome is reachable too).
/// - The files in the store directory when the simulator starts are durable, and so is the
///   directory if it exists. If it does not, the store creates it, and its entry in its parent is
///   durable only after a sync of the parent: a cut before that leaves no store directory (an
///   empty clone).
///
/// A cut happens after the system call that the random draw picked has returned, under the
/// simulator's lock, and records the workload's ``Progress`` at that instant, so a test knows
/// exactly which batches had been acknowledged and which were in flight.
final class PowerLossSimulator: @unchecked Sendable {
    /// What each writer thread of a workload had started and had been promised at one instant.
    struct Progress: Sendable, Equatable {
        /// Batches thread t had begun to write: the store may hold up to this many.
        var begun: [Int]
        /// Batches whose `write` returned.
        var acknowledged: [Int]
        /// Batches promised durable (acknowledged synchronously, or before a `sync()` or `close()`
        /// returned): the store must hold at least this many.
        var durable: [Int]

        /// Every thread at `start` batches, all durable.
        init(start: [Int]) {
            begun = start
            acknowledged = start
            durable = start
        }
    }

    /// One simulated power cut: the clone of the store it left, and the workload's progress.
    struct Cut: Sendable {
        let number: Int
        /// Index of the system call (event) after which the power went.
        let event: Int
        let after: String
        let directory: String
        let progress: Progress
    }

    let directory: String
    private let cloneRoot: String
    private let lock = NSLock()
    private var rng: SplitMix64
    private let cutChance: Double
    private let maxCuts: Int

    private struct File {
        var inode: UInt64
        /// The content at the last sync; nil when never synced.
        var synced: [UInt8]?
    }
    private var files: [Int: File] = [:]
    private var idOfInode: [UInt64: Int] = [:]
    /// The directory's entries now, and as of its last fsync.
    private var current: [String: Int] = [:]
    private var durable: [String: Int] = [:]
    /// The creates, renames and unlinks since the last directory sync, in order.
    private enum Change { case create(String, Int), rename(String, String, Int), remove(String, Int) }
    private var pending: [Change] = []
    private var nextID = 0
    private var progress: Progress
    private var cuts: [Cut] = []
    private(set) var events = 0
    private var frozen = false
    /// Whether the store directory's own entry in its parent is durable.
    private var directoryDurable = true
    /// The event after which a cut is due whatever the draw (see `cut(afterEvents:)`).
    private var scheduledCut: Int?

    /// Starts tracking `directory` (which must exist; its files are taken as durable). Each event
    /// is a cut with probability `cutChance` (16 times that after a create, unlink or directory
    /// sync, 40 times after a rename: publications), at most `maxCuts` times; clones go to `cloneRoot`-N.
    init(directory: String, cloneRoot: String, seed: UInt64, cutChance: Double, maxCuts: Int, progress: Progress) throws {
        self.directory = directory
        self.cloneRoot = cloneRoot
        self.rng = SplitMix64(seed: seed)
        self.cutChance = cutChance
        self.maxCuts = maxCuts
        self.progress = progress
        guard FileManager.default.fileExists(atPath: directory) else {
            directoryDurable = false
            return
        }
        for name in try FileManager.default.contentsOfDirectory(atPath: directory) {
            var st = stat()
            let path = directory + "/" + name
            guard stat(path, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { continue }
            let id = newID()
            files[id] = File(inode: UInt64(st.st_ino), synced: try Self.read(path))
            idOfInode[UInt64(st.st_ino)] = id
            current[name] = id
        }
        durable = current
    }

    // MARK: The workload's side

    /// Changes the recorded progress (under the lock, so that a cut sees each change whole).
    func update(_ body: (inout Progress) -> Void) {
        lock.withLock { body(&progress) }
    }

    var currentProgress: Progress { lock.withLock { progress } }

    /// The cuts taken so far.
    var allCuts: [Cut] { lock.withLock { cuts } }

    /// No more cuts (the files go on being tracked).
    func freeze() { lock.withLock { frozen = true } }

    // MARK: Events

    private func newID() -> Int {
        nextID += 1
        return nextID
    }

    private func name(_ path: String) -> String? {
        guard path.hasPrefix(directory + "/") else { return nil }
        let rest = path.dropFirst(directory.count + 1)
        return rest.contains("/") ? nil : String(rest)
    }

    func handle(_ event: IOEvent) {
        lock.lock()
        defer { lock.unlock() }
        events += 1
        var namespace = false, publication = false
        switch event {
        case .opened(let path, let descriptor):
            guard let name = name(path) else { return }
            let inode = Self.inode(descriptor)
            if let id = current[name], files[id]?.inode == inode { break }  // an existing file, maybe truncated
            let id = newID()
            files[id] = File(inode: inode, synced: nil)
            idOfInode[inode] = id
            current[name] = id
            pending.append(.create(name, id))
            namespace = true
        case .synced(_, let descriptor):
            if let id = idOfInode[Self.inode(descriptor)], files[id] != nil {
                files[id]?.synced = (try? Self.read("/proc/self/fd/\(descriptor)")) ?? []
            }
        case .renamed(let from, let to):
            guard let a = name(from), let b = name(to) else { return }
            if let id = current.removeValue(forKey: a) {
                current[b] = id
                pending.append(.rename(a, b, id))
            }
            namespace = true
            publication = true
        case .linked(_, let to):
            // A new name for a file that is durable already (a backup links only sealed, synced
            // segments): its content is what the file holds now, and its entry is a create.
            guard let name = name(to) else { return }
            var st = stat()
            guard stat(to, &st) == 0 else { return }
            let inode = UInt64(st.st_ino)
            let id = idOfInode[inode] ?? newID()
            if files[id] == nil {
                files[id] = File(inode: inode, synced: (try? Self.read(to)) ?? [])
                idOfInode[inode] = id
            }
            current[name] = id
            pending.append(.create(name, id))
            namespace = true
        case .removed(let path):
            guard let name = name(path) else { return }
            if let id = current.removeValue(forKey: name) { pending.append(.remove(name, id)) }
            namespace = true
        case .syncedDirectory(let path) where path != directory:
            if path == Self.parent(directory) { directoryDurable = true }
            namespace = true
        case .syncedDirectory:
            durable = current
            pending = []
            let live = Set(current.values).union(durable.values)
            for id in files.keys where !live.contains(id) { files[id] = nil }
            namespace = true
        case .wrote, .truncated, .createdDirectory:
            break
        }
        guard !frozen else { return }
        if let due = scheduledCut, events >= due {
            scheduledCut = nil
            return cut(after: event)
        }
        guard cuts.count < maxCuts else { return }
        let p = rng.next() >> 11
        if Double(p) / Double(UInt64(1) << 53) < cutChance * (publication ? 40 : namespace ? 16 : 1) { cut(after: event) }
    }

    /// Writes what a power cut now would leave into a new directory. Called with the lock held.
    /// Every other cut keeps some of the directory changes since the last directory sync, and
    /// every other one a prefix of unsynced appends (see the type's documentation).
    private func cut(after event: IOEvent) {
        let number = cuts.count
        let path = "\(cloneRoot)-\(number)"
        var entries = directoryDurable ? durable : [:]
        var kept = 0
        if directoryDurable && !pending.isEmpty && rng.chance(500) {
            // A random subset, or (as adversarial as it gets) only the changes of the file changed last.
            var lastID: Int?
            if rng.chance(500), let last = pending.last {
                switch last {
                case .create(_, let id), .rename(_, _, let id), .remove(_, let id): lastID = id
                }
            }
            for change in pending {
                if let lastID {
                    switch change {
                    case .create(_, let id), .rename(_, _, let id), .remove(_, let id): if id != lastID { continue }
                    }
                } else if !rng.chance(500) {
                    continue
                }
                switch change {
                case .create(let name, let id):
                    entries[name] = id
                case .rename(let a, let b, let id):
                    guard entries[a] == id else { continue }
                    entries[a] = nil
                    entries[b] = id
                case .remove(let name, let id):
                    guard entries[name] == id else { continue }
                    entries[name] = nil
                }
                kept += 1
            }
        }
        // Half the cuts also keep a random prefix of what was appended to each file since its sync.
        var torn = 0
        var contents: [Int: [UInt8]] = [:]
        if rng.chance(500) {
            var nameOf: [Int: String] = [:]
            for (name, id) in current { nameOf[id] = name }
            for id in Set(entries.values) {
                guard let name = nameOf[id], let now = try? Self.read(directory + "/" + name) else { continue }
                let base = files[id]?.synced ?? []
                guard now.count > base.count, now.starts(with: base) else { continue }
                let keep = rng.below(now.count - base.count + 1)
                if keep > 0 {
                    contents[id] = Array(now.prefix(base.count + keep))
                    torn += 1
                }
            }
        }
        var after = Self.describe(event, in: directory)
        if torn > 0 { after += "; unsynced appends partly kept in \(torn) file(s)" }
        if kept > 0 { after += "; \(kept) of \(pending.count) unsynced directory changes kept" }
        if !directoryDurable { after += "; the store directory's own entry is not durable yet" }
        do {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            for (name, id) in entries {
                try Data(contents[id] ?? files[id]?.synced ?? []).write(to: URL(fileURLWithPath: path + "/" + name))
            }
        } catch {
            return  // the test sees fewer cuts, never a wrong one
        }
        cuts.append(Cut(number: number, event: events, after: after, directory: path, progress: progress))
    }

    /// Takes a cut after the `n`-th system call from now (n ≥ 1), whatever the draw and the
    /// number of cuts so far: a cut inside an operation that makes only a few system calls.
    func cut(afterEvents n: Int) {
        lock.withLock { scheduledCut = events + max(n, 1) }
    }

    /// Takes a cut now, whatever the draw (a test of one exact moment).
    func cutNow(label: String) {
        lock.withLock { cut(after: .createdDirectory(path: label)) }
    }

    // MARK: Helpers

    static func parent(_ path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return path }
        return String(path[..<slash])
    }

    static func describe(_ event: IOEvent, in directory: String) -> String {
        func short(_ p: String) -> String { p.hasPrefix(directory + "/") ? String(p.dropFirst(directory.count + 1)) : p }
        switch event {
        case .opened(let p, _): return "open(O_CREAT) \(short(p))"
        case .wrote(let p, _, let n): return "write \(short(p)) (\(n) bytes)"
        case .synced(let p, _): return "fdatasync \(short(p))"
        case .truncated(let p, _, let n): return "ftruncate \(short(p)) to \(n)"
        case .renamed(let a, let b): return "rename \(short(a)) → \(short(b))"
        case .linked(let a, let b): return "link \(short(a)) → \(short(b))"
        case .removed(let p): return "unlink \(short(p))"
        case .syncedDirectory: return "fsync of the directory"
        case .createdDirectory(let p): return p.hasPrefix("/") ? "mkdir \(p)" : p
        }
    }

    private static func inode(_ descriptor: Int32) -> UInt64 {
        var st = stat()
        return fstat(descriptor, &st) == 0 ? UInt64(st.st_ino) : 0
    }

    private static func read(_ path: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
    }
}

/// Routes the I/O events of stores opened with ``fileSystem`` to the simulator of the directory
/// they touch; several tests may run simulators at once, each on its own directory.
enum PowerLoss {
    private static let simulators = Mutex<[String: PowerLossSimulator]>([:])

    /// The file system whose observer feeds the attached simulators: the power-loss tests open
    /// their stores and engines with it (stores opened without it are never simulated).
    static let fileSystem = FileSystem(environment: IOEnvironment(observer: { route($0) }))

    static func attach(_ simulator: PowerLossSimulator) {
        simulators.withLock { $0[simulator.directory] = simulator }
    }

    static func detach(_ simulator: PowerLossSimulator) {
        simulators.withLock {
            if $0[simulator.directory] === simulator { $0[simulator.directory] = nil }
        }
    }

    private static func route(_ event: IOEvent) {
        let parent = PowerLossSimulator.parent
        let targets: [PowerLossSimulator]
        switch event {
        case .opened(let p, _), .wrote(let p, _, _), .synced(let p, _), .truncated(let p, _, _), .removed(let p):
            targets = simulators.withLock { $0[parent(p)].map { [$0] } ?? [] }
        case .renamed(_, let to), .linked(_, let to):
            targets = simulators.withLock { $0[parent(to)].map { [$0] } ?? [] }
        case .createdDirectory(let p):
            targets = simulators.withLock { $0[p].map { [$0] } ?? [] }
        case .syncedDirectory(let p):
            // The store directory itself, or its parent (which makes a new store directory durable).
            targets = simulators.withLock { all in all.values.filter { $0.directory == p || parent($0.directory) == p } }
        }
        for s in targets { s.handle(event) }
    }
}

extension PowerLossSimulator {
    /// Checks the clone in `directory` with `StoreVerifier`, recording an issue for each fault;
    /// returns whether it verified. A clone without any store file (a cut before the first
    /// manifest was durable) holds no store, and passes: opening it creates an empty one.
    static func verifyClone(_ directory: String, label: String, key: EncryptionKey? = nil) -> Bool {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        guard names.contains(where: { ![.other, .temporary, .lock].contains(FileNames.parse($0)) }) else { return true }
        do {
            let report = try StoreVerifier.verify(storeAt: directory, key: key)
            if report.faults.isEmpty { return true }
            Issue.record("\(label): the clone does not verify: \(report.faults)")
        } catch {
            Issue.record("\(label): verifying the clone failed: \(error)")
        }
        return false
    }
}

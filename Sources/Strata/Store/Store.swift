import Foundation
import Synchronization
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// A Strata store: one directory of files holding time series, message history, documents and
/// raw key-value data, owned by one process at a time.
///
/// ```swift
/// import Strata
///
/// let store = try Store.open(at: URL(filePath: "/var/lib/app/data.strata"))
/// try store.put(Array("greeting".utf8), Array("hello".utf8))
/// let value = try store.get(Array("greeting".utf8))     // the bytes of "hello"
/// try store.close()
/// ```
///
/// ## Guarantees
/// - **Atomic batches**: a ``WriteBatch`` is applied whole or not at all, also across a crash.
/// - **Durable writes**: with ``Durability/synchronous`` (the default) a write returns after it is
///   on stable storage; ``Durability/buffered`` lifts that (see its documentation).
/// - **Isolated reads**: every read sees one consistent state; a ``StoreSnapshot`` keeps one.
/// - **One owner**: a second process opening the directory gets ``StrataError/locked(path:)``;
///   in this process, opening it again returns the same instance.
///
/// Every method is thread-safe. After ``close()``, every call throws ``StrataError/closed``.
public final class Store: Sendable {
    /// The directory the store lives in.
    public let directory: URL
    /// The options the store was opened with.
    public let options: StoreOptions
    let engine: Engine
    /// Collection names to ids (keyspace 0).
    let catalog: Catalog
    /// The open collections' shared state.
    let collections = CollectionRegistry()
    /// Delivers commits to every stream of the store (subscriptions, live queries, changes).
    let broadcaster = CommitBroadcaster()
    /// Held by the transaction running (``transaction(durability:_:)``): one at a time.
    let transactionLock = ConditionLock()
    /// The security policy that sessions check (keyspace 16).
    let security: SecurityState
    /// The threads that run the store's `async` twins (StoreExecutor.swift); stopped at close.
    let executor = StoreExecutor()
    /// The replications of the store's document databases, stopped at close.
    let replications = ReplicationRegistry()

    /// The stores this process has open, by canonical path. An entry that is opening or closing
    /// holds the gate that waiters block on, so that the engine is opened and closed outside the
    /// registry's lock (a recovery of one directory never delays an open of another) while two
    /// opens of one directory still get one instance.
    private static let registry = Mutex<[String: RegistryEntry]>([:])

    private enum RegistryEntry {
        case open(Store)
        /// An open or a close of the directory is under way; waiters wait on the gate.
        case busy(OpenGate)
    }

    /// A one-shot gate: `open()` wakes every waiter.
    private final class OpenGate: Sendable {
        private let lock = ConditionLock()
        private let opened = Mutex(false)

        func wait() {
            lock.withLock { while !opened.withLock({ $0 }) { lock.wait() } }
        }

        func open() {
            lock.withLock {
                opened.withLock { $0 = true }
                lock.broadcast()
            }
        }
    }

    private init(directory: URL, options: StoreOptions, engine: Engine) {
        self.directory = directory
        self.options = options
        self.engine = engine
        self.catalog = Catalog(engine: engine)
        self.security = SecurityState(engine: engine)
        // A failed engine ends every stream of the store by throwing its error. The observer runs
        // on the engine's failure queue, never under its lock; it holds the registry weakly, so
        // that the engine does not keep the collections alive.
        engine.onFailure { [weak collections, broadcaster] error in
            collections?.failAll(error)
            broadcaster.finishAll(throwing: error)
        }
        engine.setCommitObserver { [broadcaster] commit in broadcaster.publish(commit) }
    }

    private static func canonicalPath(_ url: URL) -> String {
        url.standardizedFileURL.resolvingSymlinksInPath().path
    }

    /// Opens the store in `directory`, creating the directory and an empty store if missing.
    ///
    /// Opening a directory this process has open already returns that same instance: without
    /// `options`, or with options equal to the ones it was opened with (every setting but the
    /// closures and the logger, which cannot be compared). Recovery happens here: the log written
    /// since the last flush is replayed, and a batch torn by a crash is cut off.
    ///
    /// - Parameter options: the store's options; `nil` means the defaults for a store not open
    ///   yet, and whatever the open store has otherwise.
    /// - Throws: ``StrataError/locked(path:)`` if another process has it open;
    ///   ``StrataError/corrupted(file:offset:reason:)`` or
    ///   ``StrataError/unsupportedFormatVersion(file:found:)`` for files it cannot trust;
    ///   ``StrataError/invalidArgument(argument:reason:)`` for options out of range, or for options other than
    ///   those of the instance this process has open already (nothing is changed then).
    public static func open(at directory: URL, options requested: StoreOptions? = nil) throws -> Store {
        let options = requested ?? StoreOptions()
        let engineOptions = try options.engineOptions()
        guard directory.isFileURL else { throw StrataError.invalidArgument(argument: "directory", reason: "directory \(directory) is not a file URL") }
        // Create first so that the canonical path resolves the same before and after.
        try options.fileSystem.createDirectory(directory.standardizedFileURL.path)
        let path = canonicalPath(directory)
        while true {
            // Claim the path (or find it open, or wait for the open or close under way), then
            // recover outside the registry's lock.
            enum Claim { case existing(Store), wait(OpenGate), mine(OpenGate) }
            let claim = registry.withLock { open -> Claim in
                switch open[path] {
                case .open(let store)?: return .existing(store)
                case .busy(let gate)?: return .wait(gate)
                case nil:
                    let gate = OpenGate()
                    open[path] = .busy(gate)
                    return .mine(gate)
                }
            }
            switch claim {
            case .existing(let store):
                if let requested {
                    let differences = store.options.differences(from: requested)
                    guard differences.isEmpty else {
                        throw StrataError.invalidArgument(argument: "options", reason:
                            "the store at \(path) is open in this process with other options (\(differences.joined(separator: ", "))); open it without options to share that instance")
                    }
                }
                return store
            case .wait(let gate):
                gate.wait()
            case .mine(let gate):
                defer { gate.open() }
                let store: Store
                do {
                    // Every kind loads its state in recovery's first phase, before anything is
                    // written (a fault refuses the open and changes nothing: FORMAT.md 4.5, step
                    // 6a), and attaches once the engine is open.
                    var loaded: [(any Sendable)?] = []
                    let engine = try Engine(directory: path, options: engineOptions) {
                        loaded = try StoreCollections.load(from: $0)
                    }
                    store = Store(directory: URL(fileURLWithPath: path, isDirectory: true), options: options, engine: engine)
                    do {
                        try StoreCollections.attach(to: store, loaded: loaded)
                    } catch {
                        try? store.engine.close()
                        throw error
                    }
                } catch {
                    registry.withLock { _ = $0.removeValue(forKey: path) }
                    throw error
                }
                registry.withLock { $0[path] = .open(store) }
                return store
            }
        }
    }

    /// The store this process has open in `directory`, if any. While this process is opening
    /// or closing it, waits for that to finish.
    public static func opened(at directory: URL) -> Store? {
        let path = canonicalPath(directory)
        while true {
            let entry = registry.withLock { $0[path] }
            switch entry {
            case .open(let store)?: return store
            case .busy(let gate)?: gate.wait()
            case nil: return nil
            }
        }
    }

    /// Closes every store this process has open, and returns the error of each store whose close
    /// failed, by directory (empty when every close succeeded). A store whose close fails is
    /// closed anyway: its files are released and every later call throws ``StrataError/closed``.
    /// Writes acknowledged under ``Durability/buffered`` by such a store may be lost.
    @discardableResult
    public static func prepareForShutdown() -> [URL: StrataError] {
        let stores = registry.withLock { open -> [Store] in
            open.values.compactMap { entry in
                if case .open(let store) = entry { return store }
                return nil
            }
        }
        return close(stores)
    }

    /// Closes each of `stores`, every one even when some fail; returns the failures by directory.
    static func close(_ stores: [Store]) -> [URL: StrataError] {
        var failures: [URL: StrataError] = [:]
        for store in stores {
            do {
                try store.close()
            } catch {
                failures[store.directory] = error as? StrataError
                    ?? .io(path: store.directory.path, errno: EIO, operation: "close")
            }
        }
        return failures
    }

    /// Closes the store if it is open here, then removes its files and, if then empty, its directory.
    ///
    /// - Throws: ``StrataError/locked(path:)`` if another process has it open;
    ///   ``StrataError/io(path:errno:operation:)`` if the directory cannot be examined (a
    ///   directory that cannot be seen is not one that does not exist) or a file cannot be removed.
    public static func destroy(at directory: URL) throws {
        try destroy(at: directory, fileSystem: .real)
    }

    /// ``destroy(at:)`` through `files` (tests inject faults with it).
    static func destroy(at directory: URL, fileSystem files: FileSystem) throws {
        if let store = opened(at: directory) { try store.close() }
        let path = canonicalPath(directory)
        guard try files.exists(path) else { return }
        let lock = try FileLock(path: path + "/" + FileNames.lock, fileSystem: files)
        defer { lock.release() }
        let names = try files.listDirectory(path)
        for name in names where FileNames.parse(name) != .other {
            try files.remove(path + "/" + name)
        }
        // An unfinished backup's marker goes last: until then, what is left is refused at open.
        if names.contains(FileNames.backupMarker) { try files.remove(path + "/" + FileNames.backupMarker) }
        if try files.listDirectory(path).isEmpty { try? files.removeDirectory(path) }
    }

    /// Waits for background work, makes every write durable and releases the directory.
    /// Idempotent; afterwards every call on the store throws ``StrataError/closed``, and every open
    /// stream (``TimeSeries/subscribe()``, ``Channel/messages(bufferSize:)``,
    /// ``DocumentDatabase/observe(_:_:)``, ``DocumentDatabase/changes(bufferSize:)``,
    /// ``PushNotifications/notifications(bufferSize:)``, ``Replication/events(bufferSize:)``, …)
    /// ends by throwing it.
    public func close() throws {
        let path = directory.path
        // The entry stays busy until the engine is closed, so that an `open` of the same directory
        // in this process waits for the close (and the release of the LOCK file) instead of
        // failing with `.locked`; the registry's lock itself is not held meanwhile.
        let gate = OpenGate()
        let claimed = Store.registry.withLock { open -> Bool in
            guard case .open(let store)? = open[path], store === self else { return false }
            open[path] = .busy(gate)
            return true
        }
        defer {
            if claimed {
                Store.registry.withLock { _ = $0.removeValue(forKey: path) }
                gate.open()
            }
        }
        // The `async` twins queued and not started throw `.closed` now, as every later one does.
        executor.stop()
        defer {
            collections.closeAll()
            replications.stopEverything()
            broadcaster.finishAll(throwing: .closed)
        }
        try engine.close()
    }

    /// Makes every write acknowledged so far durable (useful with ``Durability/buffered``).
    public func sync() throws { try engine.sync() }

    /// Flushes memory to disk and merges every segment now, applying retention and dropping
    /// deleted data; returns when done. Compaction otherwise runs in the background by itself.
    public func compact() throws { try engine.compactAll() }

    /// Copies the whole store into `directory` while writes go on: a consistent copy at one
    /// moment, which opens as a store.
    ///
    /// ```swift
    /// let store = try Store.open(at: URL(filePath: "/var/lib/app/data.strata"))
    /// try store.backup(to: URL(filePath: "/var/backups/app/2026-11-27.strata"))
    /// let copy = try Store.open(at: URL(filePath: "/var/backups/app/2026-11-27.strata"))
    /// ```
    ///
    /// The copy holds every write acknowledged before the call (under ``Durability/buffered``
    /// too) and nothing half-written: every collection, the catalog and the security policy,
    /// as of one sequence number. Writers wait only while the store notes what to copy, not
    /// while it copies. Segment files are immutable, so they are hard-linked into `directory`
    /// when it is on the same file system (`link(2)`) and copied otherwise; the write-ahead logs
    /// are copied up to that moment; the copy's manifest is written last (FORMAT.md 9.6).
    ///
    /// A crash during the backup leaves this store untouched and a `directory` that
    /// ``open(at:options:)`` refuses (it still holds the marker file `BACKUP-INCOMPLETE`;
    /// ``destroy(at:)`` removes it), never half a store. A hard-linked segment shares its
    /// blocks with the store's file: the store never changes a segment, so the copy is not
    /// affected by later writes, but the two are on one disk.
    ///
    /// - Parameter directory: where the copy goes: a directory that does not exist (it is
    ///   created, with its parents) or is empty.
    /// - Throws: ``StrataError/invalidArgument(argument:reason:)`` (`directory`) if `directory`
    ///   exists and is not an empty directory, or is this store's directory or inside it;
    ///   ``StrataError/io(path:errno:operation:)`` if a system call fails (this store is
    ///   unchanged and stays usable; `directory` may be left, refused at open);
    ///   ``StrataError/closed``.
    public func backup(to directory: URL) throws {
        guard directory.isFileURL else {
            throw StrataError.invalidArgument(argument: "directory", reason: "directory \(directory) is not a file URL")
        }
        try engine.backup(to: directory.standardizedFileURL.path)
    }

    /// Counters and sizes: sorted runs, segments, memtables, flushes, compactions, write
    /// amplification.
    public var statistics: StoreStatistics { engine.statistics }

    /// What opening the store found in its write-ahead logs: the logs and batches replayed, and
    /// every torn tail (the end of a log a crash cut short) that was discarded, with its file,
    /// offset and size. Empty `cutTails` means nothing was discarded.
    public var recovery: RecoveryReport { engine.recovery }

    // MARK: Raw key-value data

    /// Applies a batch atomically. `durability` overrides the store's for this write.
    public func write(_ batch: WriteBatch, durability: Durability? = nil) throws {
        try engine.write(batch, durability: durability)
    }

    /// Sets `key` to `value`.
    public func put(_ key: [UInt8], _ value: [UInt8]) throws {
        var b = WriteBatch()
        b.put(key, value)
        try engine.write(b)
    }

    /// Removes `key` (no error if it is absent).
    public func delete(_ key: [UInt8]) throws {
        var b = WriteBatch()
        b.delete(key)
        try engine.write(b)
    }

    /// The value of `key`, or nil.
    public func get(_ key: [UInt8]) throws -> [UInt8]? {
        try engine.get(prefix: Keyspace.keyValue.prefix, key)
    }

    /// A consistent view of the store as it is now, unaffected by later writes.
    public func snapshot() throws -> StoreSnapshot {
        StoreSnapshot(try engine.snapshot())
    }

    /// A cursor over the keys `k` with `start <= k < end` (nil: unbounded), in key order or reverse.
    public func cursor(from start: [UInt8]? = nil, to end: [UInt8]? = nil, reverse: Bool = false) throws -> KeyValueCursor {
        try snapshot().cursor(from: start, to: end, reverse: reverse)
    }

    /// The key-value pairs with `start <= key < end`, at most `limit` of them.
    public func scan(from start: [UInt8]? = nil, to end: [UInt8]? = nil, reverse: Bool = false,
                     limit: Int = .max) throws -> [(key: [UInt8], value: [UInt8])] {
        try snapshot().scan(from: start, to: end, reverse: reverse, limit: limit)
    }
}

/// A read-only view of a store at one moment. It keeps the files it reads alive: release it
/// (let it go out of scope) when done.
public final class StoreSnapshot: Sendable {
    let snapshot: Snapshot

    init(_ snapshot: Snapshot) {
        self.snapshot = snapshot
    }

    /// The value of `key` in this snapshot, or nil.
    public func get(_ key: [UInt8]) throws -> [UInt8]? {
        try snapshot.get(Keyspace.keyValue.prefix + key)
    }

    /// A cursor over `start <= key < end` in this snapshot.
    public func cursor(from start: [UInt8]? = nil, to end: [UInt8]? = nil, reverse: Bool = false) -> KeyValueCursor {
        let ks = Keyspace.keyValue
        return KeyValueCursor(snapshot.cursor(lower: ks.prefix + (start ?? []), upper: end.map { ks.prefix + $0 } ?? ks.end,
                                              reverse: reverse), prefixLength: ks.prefix.count)
    }

    /// The key-value pairs with `start <= key < end`, at most `limit` of them.
    public func scan(from start: [UInt8]? = nil, to end: [UInt8]? = nil, reverse: Bool = false,
                     limit: Int = .max) throws -> [(key: [UInt8], value: [UInt8])] {
        guard limit >= 0 else { throw StrataError.invalidArgument(argument: "limit", reason: "limit \(limit) is negative") }
        return try cursor(from: start, to: end, reverse: reverse).prefix(limit).collect()
    }
}

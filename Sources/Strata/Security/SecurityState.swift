import Synchronization
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// A store's security policy: read from the store at first use, replaced by
/// ``Store/setSecurityPolicy(_:)``. Sessions compare ``generation`` with the one their cache was
/// filled under, so a new policy reaches every open session at its next call.
final class SecurityState: Sendable {
    private let engine: Engine
    /// The policy in effect, once read.
    private let current = Mutex<ResolvedPolicy?>(nil)
    /// Serializes replacements (read the version, write, publish).
    private let replacing = Mutex<Void>(())
    /// 0 until the policy is read, then one more with each replacement.
    private let generationCounter = Atomic<UInt64>(0)

    init(engine: Engine) {
        self.engine = engine
    }

    /// The number of policies this state has published; a cache filled under another number is
    /// stale.
    @inline(__always)
    var generation: UInt64 { generationCounter.load(ordering: .acquiring) }

    /// Whether the store is closed (or closing): a denial then reports ``StrataError/closed``,
    /// as every call after close does.
    var isClosed: Bool { engine.shuttingDown.load(ordering: .relaxed) }

    /// The policy in effect and its generation, reading it from the store the first time.
    func policy() throws -> (policy: ResolvedPolicy, generation: UInt64) {
        try current.withLock { current in
            if let current { return (current, generationCounter.load(ordering: .relaxed)) }
            let stored = try engine.get(SecurityPolicyRecord.key).map(SecurityPolicyRecord.decode) ?? SecurityPolicy()
            let resolved = ResolvedPolicy(stored)
            current = resolved
            let g = generationCounter.add(1, ordering: .releasing).newValue
            return (resolved, g)
        }
    }

    /// The version of the policy in effect. A corrupt stored policy does not stop its
    /// replacement (the owner's way to repair it): its version is taken from the record's header
    /// when that reads, else 0. A policy of an unknown layout is not overwritten.
    private func currentVersion() throws -> UInt64 {
        do {
            return try policy().policy.policy.version
        } catch StrataError.corrupted {
            guard let bytes = try engine.get(SecurityPolicyRecord.key), bytes.first == SecurityPolicyRecord.layoutVersion else { return 0 }
            return (try? ByteReader.read(bytes, file: "security policy", offset: 1) { try $0.varint("version") }) ?? 0
        }
    }

    /// Stores `policy` as the next version (committed before it applies) and returns it as stored.
    func replace(with policy: SecurityPolicy) throws -> SecurityPolicy {
        try policy.validate()
        return try replacing.withLock { _ in
            var next = policy
            let (version, overflow) = try currentVersion().addingReportingOverflow(1)
            guard !overflow else {
                throw StrataError.invalidArgument(argument: "policy", reason: "security policy: the stored version is \(UInt64.max); no later version can be set")
            }
            next.version = version
            let bytes = SecurityPolicyRecord.encode(next)
            guard bytes.count <= SecurityPolicy.maximumEncodedSize else {
                throw StrataError.invalidArgument(argument: "policy", reason: "security policy: its stored form takes \(bytes.count) bytes, over the limit of \(SecurityPolicy.maximumEncodedSize)")
            }
            var batch = WriteBatch()
            batch.putRaw(SecurityPolicyRecord.key, bytes)
            try engine.commit(CommitBatch(records: batch))
            let resolved = ResolvedPolicy(next)
            current.withLock { current in
                current = resolved
                generationCounter.add(1, ordering: .releasing)
            }
            return next
        }
    }
}

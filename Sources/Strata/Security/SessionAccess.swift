import Synchronization
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// The checks of one ``StoreSession``: its principal, and its permissions resolved per path under
/// the store's current policy, cached until the policy changes. Every handle a session gives out
/// carries it; a handle from the ``Store`` carries none and is not checked.
final class SessionAccess: Sendable {
    let principal: String
    private let security: SecurityState

    private struct Cache {
        var generation: UInt64 = 0
        var policy: ResolvedPolicy?
        var global: PermissionSet?
        var paths: [String: PermissionSet] = [:]
    }

    private let cache = Mutex(Cache())
    /// Paths cached at most; a session that touches more starts again (bounded memory).
    private static let cacheLimit = 4_096

    init(principal: String, security: SecurityState) {
        self.principal = principal
        self.security = security
    }

    /// Runs `body` on a cache that is current for the store's policy.
    private func withCurrentCache<R>(_ body: (inout Cache, ResolvedPolicy) -> R) throws -> R {
        let generation = security.generation
        if let r = cache.withLock({ c -> R? in
            guard c.generation == generation, generation != 0, let p = c.policy else { return nil }
            return body(&c, p)
        }) { return r }
        let (policy, g) = try security.policy()
        return cache.withLock { c in
            if c.generation != g {
                c = Cache(generation: g, policy: policy)
            }
            return body(&c, c.policy ?? policy)
        }
    }

    /// The session's path permissions for `path`.
    func permissions(_ path: String) throws -> PermissionSet {
        try withCurrentCache { c, policy in
            if let p = c.paths[path] { return p }
            let p = policy.permissions(of: principal, path: path)
            if c.paths.count >= Self.cacheLimit { c.paths.removeAll(keepingCapacity: true) }
            c.paths[path] = p
            return p
        }
    }

    /// Whether the session may use `permission` on `path`.
    func allows(_ permission: Permission, _ path: String) throws -> Bool {
        try permissions(path).contains(permission)
    }

    /// Throws ``StrataError/permissionDenied(principal:permission:path:)`` unless the session
    /// has `permission` on `path`.
    @inline(__always)
    func require(_ permission: Permission, _ path: String) throws {
        guard try permissions(path).contains(permission) else { throw denied(permission, path) }
    }

    /// Throws unless the session has the global `permission`.
    func requireGlobal(_ permission: Permission) throws {
        let global = try withCurrentCache { c, policy in
            if let g = c.global { return g }
            let g = policy.globalPermissions(of: principal)
            c.global = g
            return g
        }
        guard global.contains(permission) else { throw denied(permission, nil) }
    }

    func denied(_ permission: Permission, _ path: String?) -> StrataError {
        security.isClosed ? .closed : .permissionDenied(principal: principal, permission: permission, path: path)
    }

    /// The author (or publisher) of a write to `path`: requires ``Permission/updateTopic``, and
    /// an explicit `author` other than the principal is denied naming it.
    func writer(_ author: String?, _ path: String) throws -> String {
        try require(.updateTopic, path)
        if let author, author != principal { throw denied(.updateTopic, path) }
        return principal
    }

    /// Checks an edit of an event whose original's author is `originalAuthor`: Diffusion's rule,
    /// ``Permission/editTimeSeriesEvents``, or ``Permission/editOwnTimeSeriesEvents`` for the
    /// principal's own events. A denial names the edit permission that would have allowed it.
    func authorizeEdit(of originalAuthor: String, _ path: String) throws {
        let p = try permissions(path)
        if p.contains(.editTimeSeriesEvents) { return }
        if originalAuthor == principal {
            guard p.contains(.editOwnTimeSeriesEvents) else { throw denied(.editOwnTimeSeriesEvents, path) }
            return
        }
        throw denied(.editTimeSeriesEvents, path)
    }
}

@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// A ``SecurityPolicy`` prepared for checks: roles as permission bits, included roles expanded.
/// Immutable; a session resolves each path once per policy and caches the result.
final class ResolvedPolicy: Sendable {
    struct ResolvedRole: Sendable {
        var global: PermissionSet
        var paths: [String: PermissionSet]
    }

    let policy: SecurityPolicy
    private let roles: [String: ResolvedRole]

    init(_ policy: SecurityPolicy) {
        self.policy = policy
        var roles: [String: ResolvedRole] = [:]
        for (name, role) in policy.roles {
            roles[name] = ResolvedRole(global: PermissionSet(role.global), paths: role.paths.mapValues { PermissionSet($0) })
        }
        self.roles = roles
    }

    /// The roles of `principal`: its assigned or the default roles, and every role they include.
    func roles(of principal: String) -> [ResolvedRole] {
        var pending = Array(policy.principals[principal] ?? policy.defaultRoles)
        var seen = Set(pending)
        var result: [ResolvedRole] = []
        while let name = pending.popLast() {
            guard let role = policy.roles[name], let resolved = roles[name] else { continue }
            result.append(resolved)
            for included in role.includedRoles where seen.insert(included).inserted { pending.append(included) }
        }
        return result
    }

    func globalPermissions(of principal: String) -> PermissionSet {
        var result = PermissionSet.none
        for role in roles(of: principal) { result.formUnion(role.global) }
        return result
    }

    /// The union over the principal's roles of each role's permissions for the most specific
    /// assigned prefix of `path` (by whole `/` segments; `""` is the root).
    func permissions(of principal: String, path: String) -> PermissionSet {
        var result = PermissionSet.none
        for role in roles(of: principal) {
            if let p = Self.mostSpecific(path, in: role.paths) { result.formUnion(p) }
        }
        return result
    }

    /// The permissions of the longest prefix of `path` that `paths` assigns: `path` itself, then
    /// each prefix ending before a `/`, then the root `""`.
    static func mostSpecific(_ path: String, in paths: [String: PermissionSet]) -> PermissionSet? {
        guard !paths.isEmpty else { return nil }
        if let p = paths[path] { return p }
        // Segments split at "/" bytes, not Characters: "/" followed by a combining mark is one
        // Character, and must still end a segment.
        let utf8 = Array(path.utf8)
        var end = utf8.count
        while let slash = utf8[..<end].lastIndex(of: UInt8(ascii: "/")) {
            if let p = paths[String(decoding: utf8[..<slash], as: UTF8.self)] { return p }
            end = slash
        }
        return paths[""]
    }
}

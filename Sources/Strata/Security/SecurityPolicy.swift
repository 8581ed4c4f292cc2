@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// Who may do what through a ``StoreSession``: Diffusion's security model, stored in the store.
///
/// A principal has the roles ``principals`` gives it, or ``defaultRoles`` if it is not named
/// there; its permissions for a path are the union, over those roles (and the roles they
/// include), of each role's permissions for the most specific assigned prefix of the path.
///
/// ```swift
/// var policy = SecurityPolicy()
/// policy.roles["trader"] = Role(global: [], paths: ["prices": [.readTopic, .selectTopic, .updateTopic,
///                                                             .editOwnTimeSeriesEvents]])
/// policy.roles["auditor"] = Role(global: [.viewSecurity], paths: ["": [.readTopic, .queryObsoleteTimeSeriesEvents]])
/// policy.principals["alice"] = ["trader"]
/// policy.defaultRoles = []                       // unnamed principals get nothing
/// try store.setSecurityPolicy(policy)
/// ```
///
/// The ``Store`` itself (the owner's handle) is never checked; a new store's policy is empty, so
/// every session is denied everything until a policy grants it.
public struct SecurityPolicy: Sendable, Hashable, Codable {
    /// Roles by name.
    public var roles: [String: Role]
    /// Each named principal's roles. A role name that ``roles`` lacks grants nothing.
    public var principals: [String: Set<String>]
    /// The roles of every principal that ``principals`` does not name.
    public var defaultRoles: Set<String>
    /// The policy's version in the store: 0 for a store that never had a policy set, then one
    /// more with each ``Store/setSecurityPolicy(_:)``. The value given to `setSecurityPolicy` is
    /// ignored.
    public internal(set) var version: UInt64

    /// An empty policy: no roles, no principals, no default roles.
    public init() {
        roles = [:]
        principals = [:]
        defaultRoles = []
        version = 0
    }

    /// A policy with the given roles and assignments.
    public init(roles: [String: Role], principals: [String: Set<String>] = [:], defaultRoles: Set<String> = []) {
        self.roles = roles
        self.principals = principals
        self.defaultRoles = defaultRoles
        version = 0
    }

    /// The path permissions `principal` has for `path` under this policy.
    public func permissions(of principal: String, path: String) -> Set<Permission> {
        ResolvedPolicy(self).permissions(of: principal, path: path).permissions
    }

    /// The global permissions `principal` has under this policy.
    public func globalPermissions(of principal: String) -> Set<Permission> {
        ResolvedPolicy(self).globalPermissions(of: principal).permissions
    }

    /// The largest stored policy accepted, in bytes.
    static let maximumEncodedSize = 16 << 20

    /// Refuses what cannot be meant: an empty role name, a path permission in `global` or a
    /// global one in `paths`, a path ending in `/`.
    func validate() throws {
        for (name, role) in roles {
            guard !name.isEmpty else { throw StrataError.invalidArgument(argument: "policy", reason: "security policy: a role name is empty") }
            if let p = role.global.first(where: { !$0.isGlobal }) {
                throw StrataError.invalidArgument(argument: "policy", reason: "security policy: role \(name.debugDescription) has path permission \(p) among its global permissions")
            }
            for (path, permissions) in role.paths {
                if let p = permissions.first(where: \.isGlobal) {
                    throw StrataError.invalidArgument(argument: "policy", reason: "security policy: role \(name.debugDescription) has global permission \(p) on path \(path.debugDescription)")
                }
                if path.hasSuffix("/") {
                    throw StrataError.invalidArgument(argument: "policy", reason: "security policy: role \(name.debugDescription) names path \(path.debugDescription), which ends in \"/\" (paths match by whole segments; name the path without it)")
                }
            }
        }
    }
}

import Foundation
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// A store's security policy as `strata-dump security` prints it (FORMAT.md §17).
public struct InspectedPolicy: Codable, Sendable, Equatable {
    /// One role.
    public struct RoleEntry: Codable, Sendable, Equatable {
        /// The role's name.
        public var name: String
        /// Its global permissions, by Diffusion name, sorted.
        public var global: [String]
        /// Its path permissions: path (`""` is the root) to permission names, sorted.
        public var paths: [String: [String]]
        /// The roles it includes, sorted.
        public var includedRoles: [String]
    }

    /// What one principal may do on one collection of the store.
    public struct Effective: Codable, Sendable, Equatable {
        /// `time series`, `channel` or `document database`.
        public var kind: String
        /// The collection's path or name.
        public var path: String
        /// The principal's permissions there, sorted.
        public var permissions: [String]
    }

    /// The policy's version (0: none was ever set).
    public var version: UInt64
    /// The roles, by name.
    public var roles: [RoleEntry]
    /// Each named principal's roles, sorted.
    public var principals: [String: [String]]
    /// The roles of principals the policy does not name, sorted.
    public var defaultRoles: [String]
    /// The principal asked about, with its global permissions and its permissions on every
    /// collection of the store; nil if none was asked about.
    public var principal: String?
    /// The asked principal's global permissions, sorted.
    public var globalPermissions: [String]?
    /// The asked principal's permissions on each collection, in kind and path order.
    public var collections: [Effective]?
}

/// Reads a store's security policy from its files, without opening the store.
///
/// ```swift
/// let policy = try SecurityInspector.policy(ofStoreAt: "/var/lib/app/data.strata", principal: "alice")
/// for c in policy.collections ?? [] { print(c.kind, c.path, c.permissions) }
/// ```
public enum SecurityInspector {
    /// The stored policy; with `principal`, also what that principal may do on each collection.
    ///
    /// - Throws: `StrataError.corrupted` or `StrataError.unsupportedFormatVersion` for a policy
    ///   record that does not decode; the errors of reading the store's files.
    ///
    /// `key` reads an encrypted store (``StoreOptions/encryptionKey``).
    public static func policy(ofStoreAt directory: String, principal: String? = nil, key: EncryptionKey? = nil) throws -> InspectedPolicy {
        let snapshot = try StoreImage.snapshot(directory: directory, key: key ?? InspectionKey.current)
        let policy = try snapshot.get(SecurityPolicyRecord.key).map(SecurityPolicyRecord.decode) ?? SecurityPolicy()
        func names(_ set: Set<Permission>) -> [String] { set.map(\.rawValue).sorted() }
        var result = InspectedPolicy(
            version: policy.version,
            roles: policy.roles.sorted { $0.key < $1.key }.map { name, role in
                InspectedPolicy.RoleEntry(name: name, global: names(role.global), paths: role.paths.mapValues(names),
                                          includedRoles: role.includedRoles.sorted())
            },
            principals: policy.principals.mapValues { $0.sorted() },
            defaultRoles: policy.defaultRoles.sorted())
        if let principal {
            result.principal = principal
            result.globalPermissions = names(policy.globalPermissions(of: principal))
            var collections: [InspectedPolicy.Effective] = []
            for kind in StoreCollections.pathKinds {
                for (name, _) in try Catalog.entries(kind: kind, in: snapshot) where !name.isEmpty {
                    collections.append(.init(kind: kind.name, path: name,
                                             permissions: names(policy.permissions(of: principal, path: name))))
                }
            }
            result.collections = collections
        }
        return result
    }
}

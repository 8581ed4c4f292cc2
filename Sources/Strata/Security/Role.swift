@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

/// A named set of permissions in a ``SecurityPolicy`` (Diffusion's role): global permissions,
/// path permissions by path prefix, and other roles it includes.
///
/// ```swift
/// let trader = Role(global: [], paths: ["prices": [.readTopic, .selectTopic, .updateTopic,
///                                                  .editOwnTimeSeriesEvents]])
/// ```
public struct Role: Sendable, Hashable, Codable {
    /// Global permissions (``Permission/viewSecurity``, ``Permission/modifySecurity``).
    public var global: Set<Permission>
    /// Path permissions by path: a path's permissions in this role are those of its most
    /// specific assigned prefix, matching by whole `/`-separated segments (`"prices"` covers
    /// `"prices/AAPL"`, not `"pricesX"`). The empty path `""` is the root: it covers every path
    /// that no longer prefix covers (Diffusion's default path permissions). A path assigned an
    /// empty set grants nothing below it, whatever a shorter prefix grants.
    public var paths: [String: Set<Permission>]
    /// Roles whose permissions this role also has (Diffusion's role inclusion). Each included
    /// role resolves its paths on its own, as if the principal had it directly; cycles are
    /// allowed and harmless.
    public var includedRoles: Set<String>

    /// A role with the given permissions.
    public init(global: Set<Permission> = [], paths: [String: Set<Permission>] = [:], includedRoles: Set<String> = []) {
        self.global = global
        self.paths = paths
        self.includedRoles = includedRoles
    }
}

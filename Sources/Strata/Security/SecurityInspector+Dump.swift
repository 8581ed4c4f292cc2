/// `strata-dump security <store> [--principal <name>]`: the store's security policy.
extension SecurityInspector: CollectionInspector {
    package static let commandName = "security"
    package static let abstract = "Print the security policy of a store: roles, principals, default roles."
    package static let discussion = """
        With --principal: also that principal's global permissions and its permissions on \
        every time series, channel and document database of the store, resolved as a \
        session would (most specific path prefix, union over roles).
        """
    package static let usage = CollectionInspectorUsage(principal: "A principal: print what it may do on each collection.")

    package static func run(storeAt store: String, arguments: CollectionInspectorArguments, json: Bool) throws -> String {
        let policy = try SecurityInspector.policy(ofStoreAt: store, principal: arguments.principal)
        return json ? try InspectionJSON.text(policy) : Self.render(policy)
    }

    static func list(_ names: [String]) -> String { names.isEmpty ? "-" : names.joined(separator: " ") }

    static func render(_ p: InspectedPolicy) -> String {
        var out = "security policy version \(p.version)\n"
        if p.roles.isEmpty {
            out += "\nno roles\n"
        } else {
            var table = TextTable(["role", "path", "permissions"])
            for role in p.roles {
                table.add([role.name, "(global)", list(role.global)])
                for (path, permissions) in role.paths.sorted(by: { $0.key < $1.key }) {
                    table.add(["", path.isEmpty ? "(root)" : path, list(permissions)])
                }
                if !role.includedRoles.isEmpty { table.add(["", "(includes)", list(role.includedRoles)]) }
            }
            out += "\nroles\n" + table.render()
        }
        var principals = TextTable(["principal", "roles"])
        for (name, roles) in p.principals.sorted(by: { $0.key < $1.key }) { principals.add([name.debugDescription, list(roles)]) }
        principals.add(["(default)", list(p.defaultRoles)])
        out += "\nprincipals\n" + principals.render()
        if let principal = p.principal {
            out += "\n\(principal.debugDescription): global \(list(p.globalPermissions ?? []))\n"
            var table = TextTable(["kind", "path", "permissions"])
            for c in p.collections ?? [] { table.add([c.kind, c.path, list(c.permissions)]) }
            out += table.render()
        }
        return out
    }
}

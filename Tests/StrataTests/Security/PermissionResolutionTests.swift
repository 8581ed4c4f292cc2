import Testing
@testable import Strata
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

@Suite struct PermissionResolutionTests {
    @Test("the most specific assigned prefix, by whole segments; the root covers the rest")
    func prefixInheritance() {
        var policy = SecurityPolicy()
        policy.roles["r"] = Role(paths: [
            "": [.readTopic],
            "prices": [.readTopic, .updateTopic],
            "prices/secret": [],
            "prices/secret/open": [.selectTopic],
        ])
        policy.principals["p"] = ["r"]
        #expect(policy.permissions(of: "p", path: "prices") == [.readTopic, .updateTopic])
        #expect(policy.permissions(of: "p", path: "prices/AAPL") == [.readTopic, .updateTopic])
        #expect(policy.permissions(of: "p", path: "prices/AAPL/x/y") == [.readTopic, .updateTopic])
        #expect(policy.permissions(of: "p", path: "pricesX") == [.readTopic], "segments match whole")
        #expect(policy.permissions(of: "p", path: "prices/secret") == [], "an empty assignment grants nothing below it")
        #expect(policy.permissions(of: "p", path: "prices/secret/x") == [])
        #expect(policy.permissions(of: "p", path: "prices/secret/open/1") == [.selectTopic])
        #expect(policy.permissions(of: "p", path: "other") == [.readTopic])
        #expect(policy.permissions(of: "p", path: "/prices") == [.readTopic])
        // A "/" that a combining mark follows is still a separator (segments split at bytes).
        #expect(policy.permissions(of: "p", path: "prices/\u{301}AAPL") == [.readTopic, .updateTopic])
    }

    @Test("a principal's permissions are the union over its roles, each resolved on its own")
    func unionOverRoles() {
        var policy = SecurityPolicy()
        policy.roles["reader"] = Role(paths: ["prices": [.readTopic]])
        policy.roles["writer"] = Role(paths: ["prices/AAPL": [.updateTopic], "": []])
        policy.principals["p"] = ["reader", "writer"]
        #expect(policy.permissions(of: "p", path: "prices/AAPL") == [.readTopic, .updateTopic])
        #expect(policy.permissions(of: "p", path: "prices/MSFT") == [.readTopic], "writer's root grants nothing; reader's prefix still holds")
    }

    @Test("default roles apply only to principals the policy does not name")
    func defaults() {
        var policy = SecurityPolicy()
        policy.roles["guest"] = Role(paths: ["": [.readTopic]])
        policy.defaultRoles = ["guest"]
        policy.principals["named"] = []
        #expect(policy.permissions(of: "anyone", path: "x") == [.readTopic])
        #expect(policy.permissions(of: "", path: "x") == [.readTopic])
        #expect(policy.permissions(of: "named", path: "x") == [], "a named principal without roles has nothing")
    }

    @Test("included roles add their permissions, through cycles; unknown role names grant nothing")
    func inclusion() {
        var policy = SecurityPolicy()
        policy.roles["a"] = Role(global: [.viewSecurity], paths: ["x": [.readTopic]], includedRoles: ["b"])
        policy.roles["b"] = Role(paths: ["x/y": [.updateTopic]], includedRoles: ["a", "missing"])
        policy.principals["p"] = ["a", "nope"]
        #expect(policy.permissions(of: "p", path: "x/y/z") == [.readTopic, .updateTopic])
        #expect(policy.globalPermissions(of: "p") == [.viewSecurity])
        #expect(policy.globalPermissions(of: "q") == [])
    }

    @Test("invalid policies are refused with what is wrong, and nothing is stored")
    func validation() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Store.open(at: dir.url)
        defer { try? store.close() }
        var bad = [SecurityPolicy]()
        var p = SecurityPolicy()
        p.roles[""] = Role()
        bad.append(p)
        p = SecurityPolicy()
        p.roles["r"] = Role(global: [.readTopic])
        bad.append(p)
        p = SecurityPolicy()
        p.roles["r"] = Role(paths: ["a": [.modifySecurity]])
        bad.append(p)
        p = SecurityPolicy()
        p.roles["r"] = Role(paths: ["a/": [.readTopic]])
        bad.append(p)
        for policy in bad {
            #expect(throws: StrataError.self) { try store.setSecurityPolicy(policy) }
            if case StrataError.invalidArgument(_, let reason)? = Self.error({ try store.setSecurityPolicy(policy) }) {
                #expect(reason.hasPrefix("security policy"))
            } else {
                Issue.record("not .invalidArgument for \(policy)")
            }
        }
        #expect(try store.securityPolicy().version == 0)
        #expect(try store.engine.get(SecurityPolicyRecord.key) == nil)
    }

    static func error(_ body: () throws -> Void) -> StrataError? {
        do { try body(); return nil } catch { return error as? StrataError }
    }
}

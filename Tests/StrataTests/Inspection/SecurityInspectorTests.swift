import Foundation
import Testing
@testable import Strata
@testable import StrataInspection
@_spi(Layers) import StrataFormat
@_spi(Layers) import StrataFiles
@_spi(Layers) import StrataEngine

// `SecurityInspector` (behind `strata-dump security`): the stored policy, read from the files.
@Suite struct SecurityInspectorTests {
    @Test("the stored policy and a principal's permissions on every collection, read without opening the store")
    func policyAndEffectivePermissions() throws {
        let dir = try TemporaryDirectory()
        defer { dir.remove() }
        let store = try Store.open(at: dir.url)
        defer { try? store.close() }
        #expect(try SecurityInspector.policy(ofStoreAt: dir.path).version == 0)
        _ = try store.timeSeries("prices/AAPL", of: Double.self)
        _ = try store.channel("chat", of: String.self)
        _ = try store.documents("main")
        var policy = SecurityPolicy()
        policy.roles["trader"] = Role(global: [.viewSecurity], paths: ["prices": [.readTopic, .updateTopic], "": [.selectTopic]],
                                      includedRoles: ["guest"])
        policy.roles["guest"] = Role(paths: ["chat": [.readTopic]])
        policy.principals["alice"] = ["trader"]
        policy.defaultRoles = ["guest"]
        try store.setSecurityPolicy(policy)
        try store.sync()

        let inspected = try SecurityInspector.policy(ofStoreAt: dir.path, principal: "alice")
        #expect(inspected.version == 1)
        #expect(inspected.roles.map(\.name) == ["guest", "trader"])
        #expect(inspected.roles[1].paths == ["prices": ["READ_TOPIC", "UPDATE_TOPIC"], "": ["SELECT_TOPIC"]])
        #expect(inspected.roles[1].global == ["VIEW_SECURITY"] && inspected.roles[1].includedRoles == ["guest"])
        #expect(inspected.principals == ["alice": ["trader"]] && inspected.defaultRoles == ["guest"])
        #expect(inspected.globalPermissions == ["VIEW_SECURITY"])
        #expect(inspected.collections == [
            .init(kind: "time series", path: "prices/AAPL", permissions: ["READ_TOPIC", "UPDATE_TOPIC"]),
            .init(kind: "channel", path: "chat", permissions: ["READ_TOPIC", "SELECT_TOPIC"]),
            .init(kind: "document database", path: "main", permissions: ["SELECT_TOPIC"]),
        ])
        let guest = try SecurityInspector.policy(ofStoreAt: dir.path, principal: "someone")
        #expect(guest.collections?.map(\.permissions) == [[], ["READ_TOPIC"], []])
    }
}

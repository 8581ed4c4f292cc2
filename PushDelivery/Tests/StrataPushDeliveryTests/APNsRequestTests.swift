import Foundation
import Testing
@testable import StrataPushDelivery

@Suite struct APNsRequestTests {
    @Test("apns-id: the same for the same notification, different for another, a version-8 RFC 9562 UUID")
    func apnsID() throws {
        let a = APNsRequest.apnsID(applicationID: "com.example", deviceToken: "a1b2", notificationID: 7)
        #expect(a == APNsRequest.apnsID(applicationID: "com.example", deviceToken: "a1b2", notificationID: 7))
        #expect(a != APNsRequest.apnsID(applicationID: "com.example", deviceToken: "a1b2", notificationID: 8))
        #expect(a != APNsRequest.apnsID(applicationID: "com.example", deviceToken: "a1b3", notificationID: 7))
        #expect(a != APNsRequest.apnsID(applicationID: "com.exampl", deviceToken: "ea1b2", notificationID: 7), "fields are separated")
        #expect(a.count == 36 && a == a.lowercased() && UUID(uuidString: a) != nil)
        let chars = Array(a)
        #expect(chars[14] == "8", "version 8")
        #expect("89ab".contains(chars[19]), "variant 10")
    }

    @Test("the path holds the token as stored, percent-encoded only where needed")
    func path() {
        #expect(APNsRequest.path(deviceToken: "a1B2-c3._~") == "/3/device/a1B2-c3._~")
        #expect(APNsRequest.path(deviceToken: "a b/c?d") == "/3/device/a%20b%2Fc%3Fd")
    }

    @Test("apns-expiration: created + expiration in epoch seconds")
    func expiration() {
        let created = Date(timeIntervalSince1970: 1_700_000_000.75)
        #expect(APNsRequest.expiration(created: created, expiration: .seconds(86_400)) == "1700086400")
        #expect(APNsRequest.expiration(created: Date(timeIntervalSince1970: 0), expiration: .milliseconds(10)) == "1")
    }
}

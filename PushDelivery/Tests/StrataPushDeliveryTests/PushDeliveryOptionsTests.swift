import Strata
import Testing
@testable import StrataPushDelivery

@Suite struct PushDeliveryOptionsTests {
    @Test("the defaults")
    func defaults() throws {
        let o = PushDeliveryOptions()
        #expect(o.maxInFlight == 1_000 && o.maxInFlightPerDevice == 1 && o.acknowledgementBatchSize == 512)
        #expect(o.acknowledgementInterval == .milliseconds(5) && o.retryBaseDelay == .seconds(1) && o.retryMaxDelay == .seconds(300))
        #expect(o.requestTimeout == .seconds(30) && o.expiration == .seconds(86_400))
        try o.validate()
    }

    @Test("each option out of range is an invalid argument naming it",
          arguments: [
              ("maxInFlight", PushDeliveryOptions(maxInFlight: 0)),
              ("maxInFlightPerDevice", PushDeliveryOptions(maxInFlightPerDevice: 0)),
              ("acknowledgementBatchSize", PushDeliveryOptions(acknowledgementBatchSize: 0)),
              ("acknowledgementInterval", PushDeliveryOptions(acknowledgementInterval: .milliseconds(-1))),
              ("retryBaseDelay", PushDeliveryOptions(retryBaseDelay: .zero)),
              ("retryMaxDelay", PushDeliveryOptions(retryBaseDelay: .seconds(2), retryMaxDelay: .seconds(1))),
              ("requestTimeout", PushDeliveryOptions(requestTimeout: .zero)),
              ("expiration", PushDeliveryOptions(expiration: .zero)),
          ])
    func invalid(argument: String, options: PushDeliveryOptions) {
        do {
            try options.validate()
            Issue.record("\(argument) passed")
        } catch StrataError.invalidArgument(let name, _) {
            #expect(name == argument)
        } catch {
            Issue.record("\(error)")
        }
    }
}

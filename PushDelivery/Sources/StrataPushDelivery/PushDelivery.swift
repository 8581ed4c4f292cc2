// The delivery loop: see PushDelivery.swift.

// The loopback peers: see APNsPeer.swift and FCMPeer.swift.

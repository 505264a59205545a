import CLibWebSockets
import Foundation

/// The C structs and strings a context is created from. lws keeps pointers into them, so they live as long as
/// the `ServiceLoop`, which destroys its context before it goes away.
final class ContextStorage: @unchecked Sendable {
    static let vhostName = "tablecast"

    private var strings: [UnsafeMutablePointer<CChar>] = []
    private let protocols: UnsafeMutablePointer<lws_protocols>
    private let protocolCount: Int
    /// Every connection's retry and idle policy, the vhost's and each client connection's: no idle checks by lws.
    let retryPolicy: UnsafeMutablePointer<lws_retry_bo_t>
    /// Complete except for `user`, which the loop sets to itself.
    private(set) var creationInfo = lws_context_creation_info()

    init(settings: ContextSettings, isServer: Bool) {
        // protocols[0] serves plain HTTP and WebSocket upgrades that ask for no subprotocol; its per-session
        // data holds the pointer to an HTTP response in progress.
        let names = isServer ? ["tablecast-http"] + settings.subprotocols : ["tablecast-client"]
        protocolCount = names.count + 1
        protocols = .allocate(capacity: protocolCount)
        protocols.initialize(repeating: lws_protocols(), count: protocolCount)
        retryPolicy = .allocate(capacity: 1)
        retryPolicy.initialize(to: lws_retry_bo_t())

        for (index, name) in names.enumerated() {
            protocols[index].name = UnsafePointer(copy(name))
            protocols[index].callback = lwsServiceCallback
            protocols[index].per_session_data_size = MemoryLayout<UnsafeMutableRawPointer?>.size
        }
        // Zero spans turn lws' idle checks off (the loop pings and hangs up itself, see `Liveness`). Without a policy
        // lws would apply its own default, 300 and 310 s.
        retryPolicy.pointee.secs_since_valid_ping = 0
        retryPolicy.pointee.secs_since_valid_hangup = 0

        var info = lws_context_creation_info()
        info.protocols = UnsafePointer(protocols)
        info.retry_and_idle_policy = UnsafePointer(retryPolicy)
        info.vhost_name = UnsafePointer(copy(Self.vhostName))
        info.timeout_secs = UInt32(clamping: settings.handshakeTimeoutSeconds)
        info.connect_timeout_secs = UInt32(clamping: settings.handshakeTimeoutSeconds)
        info.keepalive_timeout = Int32(clamping: settings.httpIdleTimeoutSeconds)
        let fdLimit = Self.fdLimit(for: settings.maxConnections)
        info.fd_limit_per_thread = UInt32(fdLimit)
        // Header tables for handshakes in flight (allocated while one is, 4 KiB each). lws stops accepting while
        // the pool is in use, so a small pool let a few hundred stalled requests (slowloris) keep everyone out
        // for the handshake timeout: allow one per descriptor, and bound stalled ones by the timeout and the
        // per-address cap instead.
        info.max_http_header_pool2 = UInt32(fdLimit)
        // A connection may hold a header table this long without completing its request.
        info.timeout_secs_ah_idle = UInt32(clamping: settings.handshakeTimeoutSeconds)
        info.count_threads = 1
        info.options |= CLibWebSockets_sslGlobalInitOption()
        // HTTP/1.1 only: the transport frames WebSocket messages and serves HTTP as HTTP/1.1 (no h2 over TLS).
        info.alpn = UnsafePointer(copy("http/1.1"))
        if isServer {
            info.port = Int32(settings.port ?? 0)
            if let host = settings.host { info.iface = UnsafePointer(copy(host)) }
            if let tls = settings.serverTLS {
                info.ssl_cert_filepath = UnsafePointer(copy(tls.certificatePath))
                info.ssl_private_key_filepath = UnsafePointer(copy(tls.privateKeyPath))
            }
        } else {
            info.port = CONTEXT_PORT_NO_LISTEN
            if let ca = settings.clientTLS.caCertificatePath { info.client_ssl_ca_filepath = UnsafePointer(copy(ca)) }
        }
        creationInfo = info
    }

    deinit {
        protocols.deinitialize(count: protocolCount)
        protocols.deallocate()
        retryPolicy.deinitialize(count: 1)
        retryPolicy.deallocate()
        for string in strings { free(string) }
    }

    private func copy(_ string: String) -> UnsafeMutablePointer<CChar> {
        let pointer = strdup(string)!
        strings.append(pointer)
        return pointer
    }

    /// lws indexes its fd table by descriptor number and, when RLIMIT_NOFILE is very large, silently caps the
    /// table at 2,560. Ask for what the process may open (so any fd number fits), but no more than needed.
    private static func fdLimit(for maxConnections: Int) -> Int {
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        let wanted = max(maxConnections * 2 + 256, 4096)
        return Int(min(UInt64(limit.rlim_cur), UInt64(max(wanted, 65_536))))
    }
}

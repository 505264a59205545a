import Foundation

/// A client request's strings as C strings, owned by its connection until lws is done with it.
final class ClientRequestStrings {
    let request: WebSocketConnectRequest
    let address: UnsafeMutablePointer<CChar>
    let path: UnsafeMutablePointer<CChar>
    let host: UnsafeMutablePointer<CChar>
    let origin: UnsafeMutablePointer<CChar>?
    let subprotocol: UnsafeMutablePointer<CChar>?
    /// The source address to bind (lws' `iface`, which takes an interface name or an IP address).
    let localAddress: UnsafeMutablePointer<CChar>?
    /// Extra handshake headers as (`name:`, value) byte arrays, the form `lws_add_http_header_by_name` takes.
    let headers: [(name: [UInt8], value: [UInt8])]

    init(_ request: WebSocketConnectRequest) {
        self.request = request
        address = strdup(request.host)!
        path = strdup(request.path)!
        host = strdup("\(request.host):\(request.port)")!
        // lws writes "Origin: http://" followed by this string.
        origin = request.origin.map { strdup($0.hasPrefix("http://") ? String($0.dropFirst(7)) : $0)! }
        subprotocol = request.subprotocol.map { strdup($0)! }
        localAddress = request.localAddress.map { strdup($0)! }
        headers = request.headers.map { name, value in (Array("\(name.lowercased()):".utf8) + [0], Array(value.utf8)) }
    }

    deinit {
        for pointer in [address, path, host, origin, subprotocol, localAddress] { free(pointer) }
    }
}

/// The version `tablecast --version` prints, `tablecast_build_info` reports and `.ci/package-deb` names the
/// package with.
enum TablecastVersion {
    static let current = "1.0.0"
}

import Foundation

/// The types a fetch request can return: managed objects, object IDs, or `NSNumber` counts
/// (`NSFetchRequest<NSNumber>` with ``NSFetchRequestResultType/countResultType``).
public protocol NSFetchRequestResult: AnyObject {}

extension NSNumber: NSFetchRequestResult {}

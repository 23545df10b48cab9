import Foundation

/// The types a fetch request can return: managed objects, object IDs, `NSDictionary` results
/// (``NSFetchRequestResultType/dictionaryResultType``), or `NSNumber` counts
/// (`NSFetchRequest<NSNumber>` with ``NSFetchRequestResultType/countResultType``).
public protocol NSFetchRequestResult: AnyObject {}

extension NSNumber: NSFetchRequestResult {}

(class name: (constant) @name) @definition.class
(class name: (scope_resolution name: (constant) @name)) @definition.class
(module name: (constant) @name) @definition.class
(method name: (_) @name) @definition.method
(singleton_method name: (_) @name) @definition.method
(assignment left: (constant) @name) @definition.constant
(call method: (identifier) @name) @reference.call
(superclass (constant) @name) @reference.type
(scope_resolution name: (constant) @name) @reference.type
(string_content) @literal

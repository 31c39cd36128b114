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
; `require "net/http"` imports; `Client.new` and `Client.build` use the constant Client.
(call method: (identifier) @_require arguments: (argument_list (string (string_content) @name)) (#any-of? @_require "require" "require_relative")) @reference.import
(call receiver: (constant) @name) @reference.type

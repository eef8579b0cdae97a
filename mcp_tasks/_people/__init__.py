"""What a person sees and answers: status lines and notebook displays, progress, the prompt, and the
turn-taking of questions put to one person.
"""
